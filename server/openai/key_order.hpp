// Restores the client's key order on a validated request value.
//
// Requests are parsed into nlohmann::json, whose objects sort their keys. Python (and so transformers and
// the model's training data) keeps insertion order, and chat templates print values with `tojson`: a tool
// schema rendered with sorted keys is a different prompt from the one the model was trained on. The
// validated value may differ from the original (roles mapped, fields dropped), so this does not re-parse:
// it walks `value` and lays each object's keys out in the order they had in `original`, appending keys the
// original did not have.
#pragma once
#include <nlohmann/json.hpp>

namespace strata {

nlohmann::ordered_json with_key_order_of(const nlohmann::json& value, const nlohmann::ordered_json& original);

}  // namespace strata
