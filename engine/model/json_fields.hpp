// Typed reads of config-file fields. Every failure is a strata::Error "<file>: <field> ..." so a bad
// checkpoint names the exact field instead of surfacing a JSON library exception.
#pragma once
#include <nlohmann/json.hpp>
#include <string>

#include "engine/core/types.hpp"

namespace strata {

class JsonFields {
 public:
  JsonFields(const nlohmann::json& obj, std::string where) : obj_(obj), where_(std::move(where)) {}

  bool has(const char* key) const { return obj_.contains(key) && !obj_[key].is_null(); }
  const nlohmann::json& at(const char* key) const { return obj_[key]; }

  Error error(const std::string& field, const std::string& problem) const {
    return Error(where_ + ": " + field + " " + problem);
  }

  int64_t integer(const char* key) const {
    if (!has(key)) throw error(key, "is missing");
    const auto& v = obj_[key];
    if (!v.is_number_integer()) throw error(key, "must be an integer, found " + v.dump());
    return v.get<int64_t>();
  }
  int64_t integer(const char* key, int64_t def) const { return has(key) ? integer(key) : def; }

  int positive(const char* key) const {
    int64_t v = integer(key);
    if (v <= 0 || v > (int64_t(1) << 30)) throw error(key, "must be a positive integer, found " + std::to_string(v));
    return int(v);
  }
  int positive(const char* key, int def) const { return has(key) ? positive(key) : def; }

  double number(const char* key, double def) const {
    if (!has(key)) return def;
    const auto& v = obj_[key];
    if (!v.is_number()) throw error(key, "must be a number, found " + v.dump());
    return v.get<double>();
  }

  bool boolean(const char* key, bool def) const {
    if (!has(key)) return def;
    const auto& v = obj_[key];
    if (!v.is_boolean()) throw error(key, "must be true or false, found " + v.dump());
    return v.get<bool>();
  }

  std::string string(const char* key, const std::string& def) const {
    if (!has(key)) return def;
    const auto& v = obj_[key];
    if (!v.is_string()) throw error(key, "must be a string, found " + v.dump());
    return v.get<std::string>();
  }

 private:
  const nlohmann::json& obj_;
  std::string where_;
};

// Parses a whole config file's text; a syntax error names the file.
inline nlohmann::json parse_json_object(const std::string& text, const std::string& where) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw Error(where + ": not valid JSON (" + e.what() + ")");
  }
  if (!j.is_object()) throw Error(where + ": not a JSON object");
  return j;
}

}  // namespace strata
