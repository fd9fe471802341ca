#include "common/units.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace rocefab {
namespace {

struct UnitDef {
  std::string_view name;
  long double scale;
};

// Splits "12.5 MiB" into 12.5 and "MiB". Returns false on a malformed number.
bool SplitNumber(std::string_view s, long double* value, std::string_view* unit) {
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  while (!s.empty() && s.back() == ' ') s.remove_suffix(1);
  size_t i = 0;
  bool digits = false, dot = false;
  while (i < s.size()) {
    char c = s[i];
    if (c >= '0' && c <= '9') {
      digits = true;
    } else if (c == '.' && !dot) {
      dot = true;
    } else {
      break;
    }
    ++i;
  }
  if (!digits) return false;
  std::string num(s.substr(0, i));
  *value = std::strtold(num.c_str(), nullptr);
  std::string_view rest = s.substr(i);
  while (!rest.empty() && rest.front() == ' ') rest.remove_prefix(1);
  *unit = rest;
  return true;
}

template <size_t N>
Result<long double> ParseWith(std::string_view s, const UnitDef (&units)[N], const char* what,
                              const char* example, const char* unit_list) {
  auto fail = [&]() {
    return Result<long double>::Error(std::string("expected ") + what + " like \"" + example +
                                      "\" (units " + unit_list + "), got \"" + std::string(s) +
                                      "\"");
  };
  if (!s.empty() && s.front() == '-') {
    return Result<long double>::Error(std::string(what) + " must not be negative, got \"" +
                                      std::string(s) + "\"");
  }
  long double v;
  std::string_view unit;
  if (!SplitNumber(s, &v, &unit)) return fail();
  for (const auto& u : units) {
    if (unit == u.name) return v * u.scale;
  }
  return fail();
}

}  // namespace

Result<Time> ParseDuration(std::string_view s) {
  static const UnitDef kUnits[] = {{"ps", 1},   {"ns", 1e3},    {"us", 1e6},   {"ms", 1e9},
                                   {"s", 1e12}, {"min", 60e12}, {"h", 3600e12}};
  auto r = ParseWith(s, kUnits, "a duration", "2us", "ps, ns, us, ms, s, min, h");
  if (!r.ok()) return r.status();
  if (r.value() > 9.2e18)
    return Result<Time>::Error("duration too large: \"" + std::string(s) + "\"");
  return static_cast<Time>(std::llround(r.value()));
}

Result<BitRate> ParseRate(std::string_view s) {
  static const UnitDef kUnits[] = {{"bps", 1},     {"Kbps", 1e3}, {"Mbps", 1e6}, {"Gbps", 1e9},
                                   {"Tbps", 1e12}, {"b/s", 1},    {"Kb/s", 1e3}, {"Mb/s", 1e6},
                                   {"Gb/s", 1e9},  {"Tb/s", 1e12}};
  auto r = ParseWith(s, kUnits, "a rate", "100Gbps", "bps, Kbps, Mbps, Gbps, Tbps");
  if (!r.ok()) return r.status();
  if (r.value() > 1e13)
    return Result<BitRate>::Error("rate above 10Tbps: \"" + std::string(s) + "\"");
  return BitRate::Bps(std::llround(r.value()));
}

Result<int64_t> ParseBytes(std::string_view s) {
  static const UnitDef kUnits[] = {
      {"B", 1},        {"KB", 1e3},        {"MB", 1e6},          {"GB", 1e9},
      {"KiB", 1024.0}, {"MiB", 1048576.0}, {"GiB", 1073741824.0}};
  auto r = ParseWith(s, kUnits, "a size", "12MiB", "B, KB, MB, GB, KiB, MiB, GiB");
  if (!r.ok()) return r.status();
  if (r.value() > 1e15) return Result<int64_t>::Error("size too large: \"" + std::string(s) + "\"");
  return static_cast<int64_t>(std::llround(r.value()));
}

Result<double> ParseLength(std::string_view s) {
  static const UnitDef kUnits[] = {{"m", 1}, {"km", 1000}};
  auto r = ParseWith(s, kUnits, "a cable length", "5m", "m, km");
  if (!r.ok()) return r.status();
  return static_cast<double>(r.value());
}

std::string FormatDuration(Time t) {
  char buf[64];
  const double a = std::fabs(static_cast<double>(t));
  if (a >= kSec) {
    std::snprintf(buf, sizeof buf, "%.3gs", t / 1e12);
  } else if (a >= kMs) {
    std::snprintf(buf, sizeof buf, "%.4gms", t / 1e9);
  } else if (a >= kUs) {
    std::snprintf(buf, sizeof buf, "%.4gus", t / 1e6);
  } else if (a >= kNs) {
    std::snprintf(buf, sizeof buf, "%.4gns", t / 1e3);
  } else {
    std::snprintf(buf, sizeof buf, "%lldps", static_cast<long long>(t));
  }
  return buf;
}

std::string FormatRate(BitRate r) {
  char buf[64];
  const double unit = r >= kGbps ? 1e9 : r >= kMbps ? 1e6 : 0;
  if (unit > 0) {
    // The fewest digits (at least 4 significant) that read back as exactly this rate, without
    // an exponent: a generated topology (Clos) is written with these and read again.
    const double v = static_cast<double>(r.bps()) / unit;
    for (int digits = 4; digits <= 17; ++digits) {
      std::snprintf(buf, sizeof buf, "%.*g%s", digits, v, unit == 1e9 ? "Gbps" : "Mbps");
      if (std::strchr(buf, 'e') == nullptr &&
          std::llround(std::strtod(buf, nullptr) * unit) == r.bps()) {
        return buf;
      }
    }
  }
  std::snprintf(buf, sizeof buf, "%lldbps", static_cast<long long>(r.bps()));
  return buf;
}

std::string FormatBytes(int64_t b) {
  char buf[64];
  if (b >= (1 << 20) && b % 1024 == 0) {
    std::snprintf(buf, sizeof buf, "%.4gMiB", b / 1048576.0);
  } else if (b >= 1024 && b % 1024 == 0) {
    std::snprintf(buf, sizeof buf, "%.4gKiB", b / 1024.0);
  } else {
    std::snprintf(buf, sizeof buf, "%lldB", static_cast<long long>(b));
  }
  return buf;
}

}  // namespace rocefab
