// Process-wide logging on spdlog: one line per event on stderr (stdout stays free for command output such
// as `strata generate`), as text or as JSON objects with the fields ts, level, msg, request_id (+ extra
// fields). Every line about a request carries its id: either log it with log_request(), or hold a
// RequestLogScope while working on that request, so that plain spdlog calls made underneath are tagged too.
#pragma once
#include <string>
#include <utility>

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

namespace strata {

enum class LogFormat { Text, Json };

// Installs the default logger (stderr, flushed on every line so a parent process sees lines at once).
// Safe to call again: the last call wins.
void setup_logging(LogFormat format, spdlog::level::level_enum level);

// A formatter for a logger of your own (tests write to an in-memory sink with it).
std::unique_ptr<spdlog::formatter> make_log_formatter(LogFormat format);

// Tags lines logged on this thread while it lives with `request_id`; nests (the previous id comes back
// when it ends). The tag is thread-local, so it is only right for synchronous loggers, which is all we use.
class RequestLogScope {
 public:
  explicit RequestLogScope(std::string request_id);
  ~RequestLogScope();
  RequestLogScope(const RequestLogScope&) = delete;
  RequestLogScope& operator=(const RequestLogScope&) = delete;

 private:
  std::string previous_;
  bool had_previous_;
};

// The id lines on this thread are currently tagged with ("" when none).
const std::string& current_request_id();

template <class... Args>
void log_request(spdlog::level::level_enum level, const std::string& request_id,
                 spdlog::format_string_t<Args...> fmt, Args&&... args) {
  RequestLogScope scope(request_id);
  spdlog::log(level, fmt, std::forward<Args>(args)...);
}

// One structured event (e.g. the summary line of a finished request): `fields` (a JSON object) become
// top-level members of the JSON line, or " key=value" pairs after the text line's message.
void log_event(spdlog::level::level_enum level, const std::string& request_id, const std::string& msg,
               const nlohmann::json& fields);

}  // namespace strata
