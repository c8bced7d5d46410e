// JSON documents as template values, the way json.loads hands them to Jinja: objects become dicts in
// document order (with nlohmann::ordered_json; nlohmann::json has already sorted its keys), integers
// stay int, reals stay float.
#pragma once
#include <nlohmann/json.hpp>

#include "engine/template/value.hpp"

namespace strata::jinja {

template <class Json>
Value from_json(const Json& j) {
  ValueNestingGuard guard;
  switch (j.type()) {
    case nlohmann::json::value_t::null: return Value::none();
    case nlohmann::json::value_t::boolean: return Value(j.template get<bool>());
    case nlohmann::json::value_t::number_integer: return Value(j.template get<int64_t>());
    case nlohmann::json::value_t::number_unsigned: {
      uint64_t u = j.template get<uint64_t>();
      // Beyond int64 Python would keep an exact int; a float is the closest we hold.
      return u > static_cast<uint64_t>(INT64_MAX) ? Value(static_cast<double>(u)) : Value(static_cast<int64_t>(u));
    }
    case nlohmann::json::value_t::number_float: return Value(j.template get<double>());
    case nlohmann::json::value_t::string: return Value(j.template get<std::string>());
    case nlohmann::json::value_t::array: {
      List items;
      items.reserve(j.size());
      for (const auto& e : j) items.push_back(from_json(e));
      return Value::list(std::move(items));
    }
    case nlohmann::json::value_t::object: {
      auto d = std::make_shared<Dict>();
      d->entries.reserve(j.size());
      for (auto it = j.begin(); it != j.end(); ++it) d->entries.emplace_back(it.key(), from_json(it.value()));
      return Value::dict(std::move(d));
    }
    default: return Value::none();  // binary / discarded values do not occur in parsed requests
  }
}

}  // namespace strata::jinja
