#include "server/openai/key_order.hpp"

namespace strata {

nlohmann::ordered_json with_key_order_of(const nlohmann::json& value, const nlohmann::ordered_json& original) {
  static const nlohmann::ordered_json kNone;
  if (value.is_object()) {
    nlohmann::ordered_json out = nlohmann::ordered_json::object();
    if (original.is_object()) {
      for (const auto& item : original.items()) {
        auto it = value.find(item.key());
        if (it != value.end()) out[item.key()] = with_key_order_of(*it, item.value());
      }
    }
    for (const auto& item : value.items())
      if (!out.contains(item.key())) out[item.key()] = with_key_order_of(item.value(), kNone);
    return out;
  }
  if (value.is_array()) {
    nlohmann::ordered_json out = nlohmann::ordered_json::array();
    for (size_t i = 0; i < value.size(); ++i)
      out.push_back(with_key_order_of(value[i], original.is_array() && i < original.size() ? original[i] : kNone));
    return out;
  }
  return nlohmann::ordered_json(value);  // scalars convert exactly
}

}  // namespace strata
