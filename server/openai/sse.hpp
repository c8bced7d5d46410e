// Server-sent events framing as OpenAI streams it: each event is one `data: <json>` line and a blank line;
// the stream ends with `data: [DONE]`. JSON is written on one line (dump never emits raw newlines), and
// invalid UTF-8 from a model is replaced rather than thrown, so an event is always well-formed.
#pragma once
#include <string>

#include <nlohmann/json.hpp>

namespace strata {

std::string sse_data(const nlohmann::json& payload);
std::string sse_done();
// Compact JSON with invalid UTF-8 replaced by U+FFFD; used for every response body.
std::string dump_json(const nlohmann::json& v);

}  // namespace strata
