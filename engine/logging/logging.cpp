#include "engine/logging/logging.hpp"

#include <ctime>

#include <spdlog/pattern_formatter.h>
#include <spdlog/sinks/stdout_sinks.h>

namespace strata {
namespace {

// Set only for the duration of one log call (or a RequestLogScope) on this thread; read by the formatter,
// which a synchronous logger runs on the calling thread.
thread_local std::string t_request_id;
thread_local bool t_has_request_id = false;
thread_local const nlohmann::json* t_fields = nullptr;

std::string iso_time(spdlog::log_clock::time_point tp) {
  const auto since = tp.time_since_epoch();
  const auto secs = std::chrono::duration_cast<std::chrono::seconds>(since);
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(since - secs).count();
  std::time_t t = static_cast<std::time_t>(secs.count());
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[80];  // room for any int the compiler imagines, not just real dates
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900, tm.tm_mon + 1,
                tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, static_cast<int>(ms));
  return buf;
}

std::string level_word(spdlog::level::level_enum level) {
  const auto sv = spdlog::level::to_string_view(level);
  return std::string(sv.data(), sv.size());
}

// Dumping with `replace` turns invalid UTF-8 into U+FFFD, so a line is valid JSON whatever was logged.
std::string dump(const nlohmann::json& j) { return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace); }

class StrataFormatter final : public spdlog::formatter {
 public:
  explicit StrataFormatter(LogFormat format) : format_(format) {}

  void format(const spdlog::details::log_msg& msg, spdlog::memory_buf_t& dest) override {
    const std::string text(msg.payload.data(), msg.payload.size());
    std::string line;
    if (format_ == LogFormat::Json) {
      nlohmann::json j = nlohmann::json::object();
      if (t_fields && t_fields->is_object())
        for (auto it = t_fields->begin(); it != t_fields->end(); ++it) j[it.key()] = it.value();
      // The four fixed fields are written last so an extra field can never overwrite them.
      j["ts"] = iso_time(msg.time);
      j["level"] = level_word(msg.level);
      j["msg"] = text;
      j["request_id"] = t_has_request_id ? nlohmann::json(t_request_id) : nlohmann::json(nullptr);
      line = dump(j);
    } else {
      line = iso_time(msg.time) + " " + level_word(msg.level) + " ";
      if (t_has_request_id) line += "[" + t_request_id + "] ";
      line += text;
      if (t_fields && t_fields->is_object())
        for (auto it = t_fields->begin(); it != t_fields->end(); ++it)
          line += " " + it.key() + "=" + (it.value().is_string() ? it.value().get<std::string>() : dump(it.value()));
    }
    line += '\n';
    dest.append(line.data(), line.data() + line.size());
  }

  std::unique_ptr<spdlog::formatter> clone() const override { return std::make_unique<StrataFormatter>(format_); }

 private:
  LogFormat format_;
};

}  // namespace

std::unique_ptr<spdlog::formatter> make_log_formatter(LogFormat format) {
  return std::make_unique<StrataFormatter>(format);
}

void setup_logging(LogFormat format, spdlog::level::level_enum level) {
  auto sink = std::make_shared<spdlog::sinks::stderr_sink_mt>();
  auto logger = std::make_shared<spdlog::logger>("strata", std::move(sink));
  logger->set_formatter(make_log_formatter(format));
  logger->set_level(level);
  logger->flush_on(spdlog::level::trace);
  spdlog::set_default_logger(std::move(logger));
}

RequestLogScope::RequestLogScope(std::string request_id)
    : previous_(std::move(t_request_id)), had_previous_(t_has_request_id) {
  // An empty id means "not about a request": such a scope clears the tag rather than printing "[]".
  t_has_request_id = !request_id.empty();
  t_request_id = std::move(request_id);
}

RequestLogScope::~RequestLogScope() {
  t_request_id = std::move(previous_);
  t_has_request_id = had_previous_;
}

const std::string& current_request_id() {
  static const std::string none;
  return t_has_request_id ? t_request_id : none;
}

void log_event(spdlog::level::level_enum level, const std::string& request_id, const std::string& msg,
               const nlohmann::json& fields) {
  RequestLogScope scope(request_id);
  const nlohmann::json* previous = t_fields;
  t_fields = &fields;
  // The formatter may throw (e.g. a sink failing); the fields pointer must not outlive this call.
  try {
    spdlog::log(level, "{}", msg);
  } catch (...) {
    t_fields = previous;
    throw;
  }
  t_fields = previous;
}

}  // namespace strata
