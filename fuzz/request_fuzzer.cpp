// Properties checked on every input:
// 1. The JSON guard never crashes, and whatever it accepts nlohmann::json parses (the guard is never more
//    permissive than JSON itself, so the body parser behind it cannot throw on a guarded body).
// 2. The chat and completions parsers only ever fail with ApiException (a 4xx for the client); any other
//    exception escapes and the fuzzer reports it.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include <nlohmann/json.hpp>

#include "server/openai/chat_request.hpp"
#include "server/openai/completion_request.hpp"
#include "server/openai/errors.hpp"
#include "server/openai/json_guard.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  strata::JsonGuardResult g = strata::check_json(text);
  if (!g.ok) {
    if (g.message.empty()) __builtin_trap();
    return 0;
  }
  nlohmann::json body;
  try {
    body = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception&) {
    __builtin_trap();  // property 1 broken: the guard let through something that is not JSON
  }
  strata::RequestLimits limits;
  limits.vocab_size = 1024;
  limits.max_context = 2048;
  try {
    strata::parse_chat_request(body, limits);
  } catch (const strata::ApiException& e) {
    if (e.error.message.empty() || e.error.status < 400 || e.error.status >= 500) __builtin_trap();
  }
  try {
    strata::parse_completion_request(body, limits);
  } catch (const strata::ApiException& e) {
    if (e.error.message.empty() || e.error.status < 400 || e.error.status >= 500) __builtin_trap();
  }
  return 0;
}
