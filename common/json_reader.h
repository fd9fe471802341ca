#pragma once
/// @file json_reader.h
/// Strict reader for JSON config objects (nlohmann_json). Every key must be read; Finish() rejects
/// the rest. Errors are thrown as ConfigError with the JSON path of the field and the rule it broke
/// ("topology.links[3].rate: must be > 0, got \"0Gbps\""), and converted to a Result<> at the
/// public FromJson boundary of each config type.

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <utility>

#include "common/time.h"

namespace rocefab {

class ConfigError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

[[noreturn]] void ThrowConfigError(const std::string& path, const std::string& rule);

class JsonReader {
 public:
  /// Throws ConfigError if `j` is not an object.
  JsonReader(const nlohmann::json& j, std::string path);

  const std::string& path() const { return path_; }
  std::string PathOf(const std::string& key) const;
  bool Has(const std::string& key) const { return j_.contains(key); }
  /// Marks `key` as read and returns it, or nullptr when absent.
  const nlohmann::json* Get(const std::string& key);
  const nlohmann::json& Require(const std::string& key);

  std::string String(const std::string& key);
  std::string String(const std::string& key, const std::string& def);
  int64_t Int(const std::string& key, int64_t min, int64_t max);
  int64_t Int(const std::string& key, int64_t def, int64_t min, int64_t max);
  double Double(const std::string& key, double def, double min, double max);
  bool Bool(const std::string& key, bool def);
  /// Unit strings (see units.h). `min` is inclusive.
  Time Duration(const std::string& key, Time min = 0);
  Time Duration(const std::string& key, Time def, Time min);
  BitRate Rate(const std::string& key);
  BitRate Rate(const std::string& key, BitRate def);
  int64_t Bytes(const std::string& key, int64_t def, int64_t min);
  double Length(const std::string& key, double def);
  /// A length (metres, >= 0) whose default is another key's value: absent, `def`; the
  /// reference page shows `def_text` (e.g. "`cable`") as its default.
  double Length(const std::string& key, double def, const std::string& def_text);

  /// Throws if the object holds a key that no call above read.
  void Finish() const;

  /// What a reader asks of a key: its type ("string", "integer", "number", "boolean",
  /// "duration", "rate", "bytes", "length"; "" for an object or array read as a whole), its
  /// default ("(required)" when it has none) and valid range.
  struct KeyInfo {
    std::string type, def, range;
  };
  /// Tests and docs (docs/scenario-reference.md): every key any reader asks for from now on,
  /// present or not, as its JSON path with array indices written "[]", goes into *keys with the
  /// first reading's KeyInfo; nullptr stops it. Not thread-safe.
  static void RecordKeysInto(std::map<std::string, KeyInfo>* keys);
  /// Records this object's keys under `generic_path` instead of its own path: for objects keyed
  /// by a user's names ("buffer.profiles.<name>"), so the reference lists the key once.
  void RecordAs(std::string generic_path) { record_path_ = std::move(generic_path); }

 private:
  void Note(const std::string& key, const char* type, const std::string& def,
            const std::string& range) const;

  const nlohmann::json& j_;
  std::string path_;
  std::string record_path_;  // RecordAs(); empty: path_
  std::set<std::string> used_;
};

/// Path of element `i` of array `key` under `parent`: "parent.key[i]".
std::string ArrayPath(const std::string& parent_path, size_t i);

/// Parses JSON text like nlohmann::json::parse but rejects an object that repeats a key (RFC 8259
/// section 4 leaves it undefined; a strict config reader must not silently keep the last one).
/// Throws nlohmann::json::parse_error for syntax errors and ConfigError naming the key for
/// duplicates.
nlohmann::json ParseJsonStrict(std::istream& in);

}  // namespace rocefab
