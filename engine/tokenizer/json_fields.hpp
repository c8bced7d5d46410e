// Typed access to tokenizer.json fields: every failure names the component and the field.
#pragma once
#include <string>

#include <nlohmann/json.hpp>

#include "engine/core/types.hpp"

namespace strata {

inline const nlohmann::json& field(const nlohmann::json& j, const char* key, const std::string& what) {
  auto it = j.find(key);
  if (it == j.end()) throw Error(what + ": missing field \"" + key + "\"");
  return *it;
}

inline std::string component_type(const nlohmann::json& j, const std::string& kind) {
  if (!j.is_object()) throw Error("tokenizer.json: " + kind + " must be an object or null");
  auto it = j.find("type");
  if (it == j.end() || !it->is_string()) throw Error("tokenizer.json: " + kind + " has no string \"type\"");
  return it->get<std::string>();
}

inline std::string string_field(const nlohmann::json& j, const char* key, const std::string& what) {
  const auto& v = field(j, key, what);
  if (!v.is_string()) throw Error(what + ": field \"" + key + "\" must be a string");
  return v.get<std::string>();
}

inline std::string string_field(const nlohmann::json& j, const char* key, const std::string& what,
                                const std::string& fallback) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return fallback;
  if (!it->is_string()) throw Error(what + ": field \"" + key + "\" must be a string");
  return it->get<std::string>();
}

inline bool bool_field(const nlohmann::json& j, const char* key, const std::string& what, bool fallback) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return fallback;
  if (!it->is_boolean()) throw Error(what + ": field \"" + key + "\" must be a boolean");
  return it->get<bool>();
}

inline long long int_field(const nlohmann::json& j, const char* key, const std::string& what, long long fallback) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return fallback;
  if (!it->is_number_integer()) throw Error(what + ": field \"" + key + "\" must be an integer");
  return it->get<long long>();
}

}  // namespace strata
