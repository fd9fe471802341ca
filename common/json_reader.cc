#include "common/json_reader.h"

#include <cstdint>
#include <cstdio>

#include "common/units.h"

#include <istream>
#include <vector>

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

const nlohmann::json* JsonReader::Get(const std::string& key) {
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

std::string JsonReader::String(const std::string& key) { return AsString(Require(key), PathOf(key)); }

std::string JsonReader::String(const std::string& key, const std::string& def) {
  const auto* v = Get(key);
  return v ? AsString(*v, PathOf(key)) : def;
}

int64_t JsonReader::Int(const std::string& key, int64_t min, int64_t max) {
  const auto& v = Require(key);
  if (!v.is_number_integer()) {
    ThrowConfigError(PathOf(key), std::string("must be an integer, got ") + v.type_name());
  }
  if (v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX)) {
    ThrowConfigError(PathOf(key), "must be in [" + std::to_string(min) + ", " + std::to_string(max) +
                                      "], got " + std::to_string(v.get<uint64_t>()));
  }
  int64_t x = v.get<int64_t>();
  if (x < min || x > max) {
    ThrowConfigError(PathOf(key), "must be in [" + std::to_string(min) + ", " +
                                      std::to_string(max) + "], got " + std::to_string(x));
  }
  return x;
}

int64_t JsonReader::Int(const std::string& key, int64_t def, int64_t min, int64_t max) {
  return Has(key) ? Int(key, min, max) : def;
}

double JsonReader::Double(const std::string& key, double def, double min, double max) {
  const auto* v = Get(key);
  if (!v) return def;
  if (!v->is_number()) {
    ThrowConfigError(PathOf(key), std::string("must be a number, got ") + v->type_name());
  }
  double x = v->get<double>();
  if (!(x >= min && x <= max)) {
    char got[32];
    std::snprintf(got, sizeof got, "%g", x);  // 1e308, not a 300-digit number
    ThrowConfigError(PathOf(key), "must be in [" + std::to_string(min) + ", " + std::to_string(max) +
                                      "], got " + got);
  }
  return x;
}

bool JsonReader::Bool(const std::string& key, bool def) {
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
  Time t = ParseUnit<Time>(Require(key), PathOf(key), ParseDuration);
  if (t < min) ThrowConfigError(PathOf(key), "must be at least " + FormatDuration(min));
  return t;
}

Time JsonReader::Duration(const std::string& key, Time def, Time min) {
  return Has(key) ? Duration(key, min) : def;
}

BitRate JsonReader::Rate(const std::string& key) {
  BitRate r = ParseUnit<BitRate>(Require(key), PathOf(key), ParseRate);
  if (r.bps() <= 0) ThrowConfigError(PathOf(key), "rate must be > 0");
  return r;
}

BitRate JsonReader::Rate(const std::string& key, BitRate def) { return Has(key) ? Rate(key) : def; }

int64_t JsonReader::Bytes(const std::string& key, int64_t def, int64_t min) {
  if (!Has(key)) return def;
  int64_t b = ParseUnit<int64_t>(Require(key), PathOf(key), ParseBytes);
  if (b < min) ThrowConfigError(PathOf(key), "must be at least " + std::to_string(min) + " bytes");
  return b;
}

double JsonReader::Length(const std::string& key, double def) {
  return Has(key) ? ParseUnit<double>(Require(key), PathOf(key), ParseLength) : def;
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
