#include "server/openai/fields.hpp"

#include <cmath>
#include <sstream>

#include "server/openai/errors.hpp"

namespace strata {

const char* json_kind(const nlohmann::json& v) {
  switch (v.type()) {
    case nlohmann::json::value_t::null: return "null";
    case nlohmann::json::value_t::boolean: return "a boolean";
    case nlohmann::json::value_t::number_integer:
    case nlohmann::json::value_t::number_unsigned: return "an integer";
    case nlohmann::json::value_t::number_float: return "a number";
    case nlohmann::json::value_t::string: return "a string";
    case nlohmann::json::value_t::array: return "an array";
    case nlohmann::json::value_t::object: return "an object";
    default: return "an unsupported value";
  }
}

std::string qname(const std::string& path) { return "'" + path + "'"; }

std::string format_number(double v) {
  std::ostringstream os;
  os.precision(12);
  os << v;
  return os.str();
}

Fields::Fields(const nlohmann::json& obj, std::string path) : obj_(obj), path_(std::move(path)) {}

std::string Fields::name(const std::string& key) const { return path_.empty() ? key : path_ + "." + key; }

const nlohmann::json* Fields::get(const std::string& key) const {
  if (!obj_.is_object()) return nullptr;
  auto it = obj_.find(key);
  if (it == obj_.end() || it->is_null()) return nullptr;
  return &*it;
}

std::optional<bool> Fields::boolean(const std::string& key) const {
  const nlohmann::json* v = get(key);
  if (!v) return std::nullopt;
  if (!v->is_boolean()) throw_invalid(name(key), qname(name(key)) + " must be a boolean, got " + json_kind(*v), "invalid_type");
  return v->get<bool>();
}

int64_t integer_value(const nlohmann::json& v, const std::string& path, int64_t lo, int64_t hi) {
  int64_t out = 0;
  if (v.is_number_integer() && !v.is_number_unsigned()) {
    out = v.get<int64_t>();
  } else if (v.is_number_unsigned()) {
    // JSON text parses non-negative integers as unsigned; past INT64_MAX it is out of any range we accept.
    uint64_t u = v.get<uint64_t>();
    if (u > static_cast<uint64_t>(INT64_MAX))
      throw_invalid(path, qname(path) + " must be at most " + std::to_string(hi) + ", got " + std::to_string(u));
    out = static_cast<int64_t>(u);
  } else if (v.is_number_float()) {
    double d = v.get<double>();
    if (!std::isfinite(d) || std::floor(d) != d)
      throw_invalid(path, qname(path) + " must be an integer, got " + format_number(d), "invalid_type");
    if (d < static_cast<double>(lo) || d > static_cast<double>(hi))
      throw_invalid(path, qname(path) + " must be between " + std::to_string(lo) + " and " + std::to_string(hi) +
                              ", got " + format_number(d));
    out = static_cast<int64_t>(d);
  } else {
    throw_invalid(path, qname(path) + " must be an integer, got " + json_kind(v), "invalid_type");
  }
  if (out < lo || out > hi) {
    std::string msg = qname(path) + " must be ";
    if (hi == INT64_MAX) msg += "at least " + std::to_string(lo);
    else msg += "between " + std::to_string(lo) + " and " + std::to_string(hi);
    throw_invalid(path, msg + ", got " + std::to_string(out));
  }
  return out;
}

std::optional<int64_t> Fields::integer(const std::string& key, int64_t lo, int64_t hi) const {
  const nlohmann::json* v = get(key);
  if (!v) return std::nullopt;
  return integer_value(*v, name(key), lo, hi);
}

std::optional<double> Fields::number(const std::string& key, double lo, double hi) const {
  const nlohmann::json* v = get(key);
  if (!v) return std::nullopt;
  if (!v->is_number()) throw_invalid(name(key), qname(name(key)) + " must be a number, got " + json_kind(*v), "invalid_type");
  double d = v->get<double>();
  if (!std::isfinite(d) || d < lo || d > hi)
    throw_invalid(name(key), qname(name(key)) + " must be between " + format_number(lo) + " and " + format_number(hi) +
                                 ", got " + format_number(d));
  return d;
}

std::optional<std::string> Fields::string(const std::string& key, size_t max_bytes) const {
  const nlohmann::json* v = get(key);
  if (!v) return std::nullopt;
  if (!v->is_string()) throw_invalid(name(key), qname(name(key)) + " must be a string, got " + json_kind(*v), "invalid_type");
  const std::string& s = v->get_ref<const std::string&>();
  if (s.size() > max_bytes)
    throw_invalid(name(key), qname(name(key)) + " is longer than the limit of " + std::to_string(max_bytes) + " bytes");
  return s;
}

}  // namespace strata
