#include "common/json_reader.h"

#include <cstdint>
#include <cstdio>
#include <istream>
#include <vector>

#include "common/units.h"

namespace rocefab {

void ThrowConfigError(const std::string& path, const std::string& rule) {
  throw ConfigError(path + ": " + rule);
}

std::string ArrayPath(const std::string& parent_path, size_t i) {
  return parent_path + "[" + std::to_string(i) + "]";
}

JsonReader::JsonReader(const nlohmann::json& j, std::string path) : j_(j), path_(std::move(path)) {
  if (!j_.is_object()) {
    ThrowConfigError(path_.empty() ? "(top level)" : path_,
                     std::string("must be a JSON object, got ") + j_.type_name());
  }
}

std::string JsonReader::PathOf(const std::string& key) const {
  return path_.empty() ? key : path_ + "." + key;
}

namespace {
std::map<std::string, JsonReader::KeyInfo>* g_key_recorder = nullptr;
}  // namespace

void JsonReader::RecordKeysInto(std::map<std::string, KeyInfo>* keys) { g_key_recorder = keys; }

void JsonReader::Note(const std::string& key, const char* type, const std::string& def,
                      const std::string& range) const {
  if (g_key_recorder == nullptr) return;
  // Array elements as [] so that every traffic[i].rate is one key.
  const std::string p = record_path_.empty() ? PathOf(key) : record_path_ + "." + key;
  std::string norm;
  for (size_t i = 0; i < p.size(); ++i) {
    if (p[i] == '[') {
      norm += "[]";
      while (i < p.size() && p[i] != ']') ++i;
    } else {
      norm += p[i];
    }
  }
  g_key_recorder->emplace(norm, KeyInfo{type, def, range});  // the first reading describes it
}

const nlohmann::json* JsonReader::Get(const std::string& key) {
  Note(key, "", "", "");
  auto it = j_.find(key);
  if (it == j_.end()) return nullptr;
  used_.insert(key);
  return &*it;
}

const nlohmann::json& JsonReader::Require(const std::string& key) {
  const nlohmann::json* v = Get(key);
  if (v == nullptr) ThrowConfigError(PathOf(key), "required field is missing");
  return *v;
}

namespace {
const std::string& AsString(const nlohmann::json& v, const std::string& path) {
  if (!v.is_string()) {
    ThrowConfigError(path, std::string("must be a string, got ") + v.type_name());
  }
  return v.get_ref<const std::string&>();
}
}  // namespace

std::string JsonReader::String(const std::string& key) {
  Note(key, "string", "(required)", "");
  return AsString(Require(key), PathOf(key));
}

std::string JsonReader::String(const std::string& key, const std::string& def) {
  Note(key, "string", def.empty() ? "\"\"" : def, "");
  const auto* v = Get(key);
  return v ? AsString(*v, PathOf(key)) : def;
}

namespace {
std::string IntRange(int64_t min, int64_t max) {
  auto f = [](int64_t x) {
    return x == INT64_MAX   ? std::string("2^63-1")
           : x == INT64_MIN ? std::string("-2^63")
                            : std::to_string(x);
  };
  return f(min) + " .. " + f(max);
}
}  // namespace

int64_t JsonReader::Int(const std::string& key, int64_t min, int64_t max) {
  Note(key, "integer", "(required)", IntRange(min, max));
  const auto& v = Require(key);
  if (!v.is_number_integer()) {
    ThrowConfigError(PathOf(key), std::string("must be an integer, got ") + v.type_name());
  }
  if (v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX)) {
    ThrowConfigError(PathOf(key), "must be in [" + std::to_string(min) + ", " +
                                      std::to_string(max) + "], got " +
                                      std::to_string(v.get<uint64_t>()));
  }
  int64_t x = v.get<int64_t>();
  if (x < min || x > max) {
    ThrowConfigError(PathOf(key), "must be in [" + std::to_string(min) + ", " +
                                      std::to_string(max) + "], got " + std::to_string(x));
  }
  return x;
}

int64_t JsonReader::Int(const std::string& key, int64_t def, int64_t min, int64_t max) {
  Note(key, "integer", std::to_string(def), IntRange(min, max));
  return Has(key) ? Int(key, min, max) : def;
}

double JsonReader::Double(const std::string& key, double def, double min, double max) {
  {
    char d[32], r[80];
    std::snprintf(d, sizeof d, "%g", def);
    std::snprintf(r, sizeof r, "%g .. %g", min, max);
    Note(key, "number", d, r);
  }
  const auto* v = Get(key);
  if (!v) return def;
  if (!v->is_number()) {
    ThrowConfigError(PathOf(key), std::string("must be a number, got ") + v->type_name());
  }
  double x = v->get<double>();
  if (!(x >= min && x <= max)) {
    char got[32];
    std::snprintf(got, sizeof got, "%g", x);  // 1e308, not a 300-digit number
    ThrowConfigError(PathOf(key), "must be in [" + std::to_string(min) + ", " +
                                      std::to_string(max) + "], got " + got);
  }
  return x;
}

bool JsonReader::Bool(const std::string& key, bool def) {
  Note(key, "boolean", def ? "true" : "false", "");
  const auto* v = Get(key);
  if (!v) return def;
  if (!v->is_boolean()) {
    ThrowConfigError(PathOf(key), std::string("must be true or false, got ") + v->type_name());
  }
  return v->get<bool>();
}

template <class T, class F>
static T ParseUnit(const nlohmann::json& v, const std::string& path, F parse) {
  auto r = parse(AsString(v, path));
  if (!r.ok()) ThrowConfigError(path, r.message());
  return r.value();
}

Time JsonReader::Duration(const std::string& key, Time min) {
  Note(key, "duration", "(required)", ">= " + FormatDuration(min));
  Time t = ParseUnit<Time>(Require(key), PathOf(key), ParseDuration);
  if (t < min) ThrowConfigError(PathOf(key), "must be at least " + FormatDuration(min));
  return t;
}

Time JsonReader::Duration(const std::string& key, Time def, Time min) {
  Note(key, "duration", def == kTimeNever ? "never" : FormatDuration(def),
       ">= " + FormatDuration(min));
  return Has(key) ? Duration(key, min) : def;
}

BitRate JsonReader::Rate(const std::string& key) {
  Note(key, "rate", "(required)", "> 0, <= 10Tbps");
  BitRate r = ParseUnit<BitRate>(Require(key), PathOf(key), ParseRate);
  if (r.bps() <= 0) ThrowConfigError(PathOf(key), "rate must be > 0");
  return r;
}

BitRate JsonReader::Rate(const std::string& key, BitRate def) {
  Note(key, "rate", def.bps() == 0 ? "0 (unset)" : FormatRate(def), "> 0, <= 10Tbps");
  return Has(key) ? Rate(key) : def;
}

int64_t JsonReader::Bytes(const std::string& key, int64_t def, int64_t min) {
  Note(key, "bytes", FormatBytes(def), ">= " + std::to_string(min) + " B");
  if (!Has(key)) return def;
  int64_t b = ParseUnit<int64_t>(Require(key), PathOf(key), ParseBytes);
  if (b < min) ThrowConfigError(PathOf(key), "must be at least " + std::to_string(min) + " bytes");
  return b;
}

double JsonReader::Length(const std::string& key, double def) {
  {
    char d[32];
    std::snprintf(d, sizeof d, "%gm", def);
    Note(key, "length", d, "");
  }
  return Has(key) ? ParseUnit<double>(Require(key), PathOf(key), ParseLength) : def;
}

double JsonReader::Length(const std::string& key, double def, const std::string& def_text) {
  Note(key, "length", def_text, ">= 0");
  if (!Has(key)) return def;
  const double v = ParseUnit<double>(Require(key), PathOf(key), ParseLength);
  if (v < 0) ThrowConfigError(PathOf(key), "must be >= 0");
  return v;
}

void JsonReader::Finish() const {
  for (auto it = j_.begin(); it != j_.end(); ++it) {
    if (!used_.count(it.key())) {
      ThrowConfigError(PathOf(it.key()), "unknown key");
    }
  }
}

nlohmann::json ParseJsonStrict(std::istream& in) {
  std::vector<std::set<std::string>> keys;  // one set per open object
  std::vector<std::string> path;
  auto cb = [&](int /*depth*/, nlohmann::json::parse_event_t ev, nlohmann::json& parsed) {
    using E = nlohmann::json::parse_event_t;
    if (ev == E::object_start) keys.emplace_back();
    if (ev == E::object_end && !keys.empty()) keys.pop_back();
    if (ev == E::key && !keys.empty()) {
      const std::string k = parsed.get<std::string>();
      if (!keys.back().insert(k).second) ThrowConfigError(k, "duplicate key in the same object");
    }
    return true;
  };
  return nlohmann::json::parse(in, cb);
}

}  // namespace rocefab
