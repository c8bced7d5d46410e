#include "server/generation_common.hpp"
#include "engine/logging/logging.hpp"

#include <algorithm>
#include <chrono>
#include <random>

#include "server/openai/errors.hpp"
#include "server/openai/fields.hpp"
#include "server/openai/sse.hpp"

namespace strata {

std::string resolve_model(const RouteEnv& env, const std::string& model) {
  std::string canonical = env.model_ids.empty() ? std::string("strata") : env.model_ids.front();
  if (model.empty()) return canonical;
  for (const std::string& id : env.model_ids)
    if (id == model) return id;
  throw ApiException(model_not_found_error(model));
}

void require_engine(const RouteEnv& env) {
  if (!env.engine || !env.codec)
    throw ApiException(unavailable_error("the model is still loading; retry shortly", "model_loading"));
}

void check_prompt_length(const RouteEnv& env, size_t prompt_tokens, const std::string& param,
                         std::optional<int> max_tokens) {
  if (prompt_tokens == 0) throw_invalid(param, qname(param) + " tokenizes to no tokens; nothing to continue from");
  if (env.max_context <= 0) return;
  size_t ctx = static_cast<size_t>(env.max_context);
  if (prompt_tokens >= ctx)
    throw ApiException(invalid_param(param,
                                     "the prompt has " + std::to_string(prompt_tokens) +
                                         " tokens, but this model's context length is " + std::to_string(ctx) +
                                         " tokens, which leaves no room to generate; shorten " + qname(param),
                                     "context_length_exceeded"));
  if (max_tokens && prompt_tokens + static_cast<size_t>(*max_tokens) > ctx)
    throw ApiException(invalid_param("max_tokens",
                                     "'max_tokens' is " + std::to_string(*max_tokens) + " but the prompt has " +
                                         std::to_string(prompt_tokens) + " tokens and this model's context length is " +
                                         std::to_string(ctx) + " tokens: at most " + std::to_string(ctx - prompt_tokens) +
                                         " can be generated",
                                     "context_length_exceeded"));
}

namespace {
uint64_t random_u64() {
  static thread_local std::mt19937_64 gen([] {
    std::random_device rd;
    uint64_t s = (static_cast<uint64_t>(rd()) << 32) ^ rd();
    return s ^ static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
  }());
  return gen();
}
}  // namespace

std::string new_response_id(const std::string& prefix) {
  static const char* hex = "0123456789abcdef";
  std::string s = prefix;
  uint64_t a = random_u64(), b = random_u64();
  for (int i = 0; i < 16; ++i, a >>= 4) s.push_back(hex[a & 15]);
  for (int i = 0; i < 8; ++i, b >>= 4) s.push_back(hex[b & 15]);
  return s;
}

ResponseHeader make_header(const std::string& id_prefix, const std::string& model) {
  ResponseHeader h;
  h.id = new_response_id(id_prefix);
  h.created = std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
  h.model = model;
  return h;
}

std::vector<std::shared_ptr<GenerationRequest>> make_requests(const RouteEnv& env, const GenerationOptions& g,
                                                              const std::vector<TokenId>& prompt, int logprobs,
                                                              bool prompt_logprobs, const std::string& id,
                                                              int first_index) {
  std::vector<std::shared_ptr<GenerationRequest>> out;
  // The engine refuses prompt + max_tokens > context and fills the context for a negative max_tokens.
  int max_tokens = -1;
  if (g.max_tokens) {
    max_tokens = *g.max_tokens;
  } else if (env.limits.max_tokens_limit > 0) {
    int room = env.max_context > 0 ? env.max_context - static_cast<int>(prompt.size()) : env.limits.max_tokens_limit;
    max_tokens = std::min(env.limits.max_tokens_limit, room);
  }
  for (int j = 0; j < g.n; ++j) {
    auto r = std::make_shared<GenerationRequest>();
    r->id = id + "-" + std::to_string(first_index + j);
    r->prompt = prompt;
    r->sampling = g.sampling;
    r->sampling.seed = g.seed ? *g.seed + static_cast<uint64_t>(j) : random_u64();
    r->max_tokens = max_tokens;
    r->min_tokens = g.min_tokens;
    r->ignore_eos = g.ignore_eos;
    r->stop = g.stop;
    r->stop_token_ids = g.stop_token_ids;
    r->skip_special_tokens = g.skip_special_tokens;
    r->logprobs = logprobs;
    r->prompt_logprobs = prompt_logprobs;
    log_request(spdlog::level::info, r->id, "request received: prompt_tokens={} max_tokens={}", r->prompt.size(),
                r->max_tokens);
    out.push_back(std::move(r));
  }
  return out;
}

std::function<bool()> stop_predicate(const RouteEnv& env, const CallContext& call) {
  const std::atomic<bool>* aborting = env.aborting;
  std::function<bool()> gone = call.client_gone;
  return [aborting, gone] { return (aborting && aborting->load()) || (gone && gone()); };
}

SseSession::SseSession(const RouteEnv& env, const CallContext& call, GenerationJob& job,
                       const std::function<bool(const std::string&)>& write)
    : write_(write), job_(job), received_(call.received), submitted_(call.submitted) {
  auto base = stop_predicate(env, call);
  stop_ = [this, base] { return !client_ok_ || base(); };
}

bool SseSession::send(const nlohmann::json& event) {
  if (client_ok_ && !write_(sse_data(event))) client_ok_ = false;
  return client_ok_;
}

bool SseSession::send_token(const nlohmann::json& event) {
  const bool first = first_token_write_ == std::chrono::steady_clock::time_point{};
  if (first) first_write_begin_ = std::chrono::steady_clock::now();
  const bool ok = send(event);
  if (ok && first) {
    first_token_write_ = std::chrono::steady_clock::now();
    if (job_.first_take_run_queue_ns() >= 0) {
      const int64_t now_queued = thread_run_queue_ns();
      if (now_queued >= 0) first_write_queued_ns_ = now_queued - job_.first_take_run_queue_ns();
    }
  }
  return ok;
}

void SseSession::log_delivery() const {
  const GenerationJob& job = job_;
  if (!spdlog::should_log(spdlog::level::debug) || job.size() == 0) return;
  using namespace std::chrono;
  const auto age = steady_clock::now() - received_;
  const double arrival_unix = duration<double>((system_clock::now() - duration_cast<system_clock::duration>(age)).time_since_epoch()).count();
  nlohmann::json fields = {{"arrival_unix", arrival_unix}};
  auto since = [&](steady_clock::time_point t) { return duration<double>(t - received_).count(); };
  if (submitted_ != steady_clock::time_point{}) fields["submitted_s"] = since(submitted_);
  // The first token's hand-off: the reader woken, the reader holding the event, the chunk written.
  const RequestChannel& ch = job.channel(0);
  if (ch.first_wake() != steady_clock::time_point{}) fields["woken_s"] = since(ch.first_wake());
  if (ch.first_pop() != steady_clock::time_point{}) fields["popped_s"] = since(ch.first_pop());
  if (first_token_write_ != steady_clock::time_point{}) fields["first_write_s"] = since(first_token_write_);
  if (first_write_begin_ != steady_clock::time_point{}) fields["write_begin_s"] = since(first_write_begin_);
  if (first_write_queued_ns_ >= 0) fields["write_queued_s"] = first_write_queued_ns_ * 1e-9;
  log_event(spdlog::level::debug, job.request(0).id, "stream delivered", fields);
}

int SseSession::finish(const nlohmann::json& usage_chunk) {
  log_delivery();
  if (!client_ok_) {
    job_.cancel();
    return 499;
  }
  if (!job_.finished()) {
    ApiError err = unavailable_error("the server stopped this request before it finished", "request_aborted");
    send(error_body(err));
    return err.status;
  }
  if (!usage_chunk.is_null()) send(usage_chunk);
  write_(sse_done());
  return 200;
}

RouteResponse unfinished_response(const RouteEnv& env) {
  if (env.aborting && env.aborting->load())
    return error_response(unavailable_error("the server stopped this request before it finished", "request_aborted"));
  ApiError e;
  e.status = 499;
  e.code = "client_closed_request";
  e.message = "the client closed the connection before the answer was ready";
  return error_response(e);
}

std::optional<RouteResponse> collect_whole(const RouteEnv& env, GenerationJob& job, const CallContext& call,
                                           WholeAnswer* out,
                                           const std::function<void(size_t, const TokenEvent&)>& on_token) {
  const size_t n = job.size();
  out->text.assign(n, std::string());
  std::vector<std::optional<FinishEvent>> fin(n);
  auto stop = stop_predicate(env, call);
  while (!job.finished()) {
    auto ev = job.wait(stop);
    if (!ev) break;
    auto& [i, e] = *ev;
    if (e.token) {
      out->text[i] += e.token->text;
      on_token(i, *e.token);
    }
    if (e.finish) {
      if (is_failure(*e.finish)) return error_response(finish_error(*e.finish));
      out->text[i] += e.finish->text;
      fin[i] = std::move(e.finish);
    }
  }
  if (!job.finished()) return unfinished_response(env);
  out->finish.clear();
  for (auto& f : fin) out->finish.push_back(std::move(*f));
  return std::nullopt;
}

bool is_failure(const FinishEvent& f) { return f.reason == FinishReason::Error || f.reason == FinishReason::Cancelled; }

ApiError finish_error(const FinishEvent& f) {
  ApiError e;
  if (f.reason == FinishReason::Cancelled) {
    e = unavailable_error(f.error_message.empty() ? "the request was cancelled by the server" : f.error_message,
                          f.error_code.empty() ? "request_cancelled" : f.error_code);
    return e;
  }
  e.status = f.http_status >= 400 ? f.http_status : 500;
  e.type = e.status < 500 ? "invalid_request_error" : "server_error";
  e.code = f.error_code.empty() ? "engine_error" : f.error_code;
  e.message = f.error_message.empty() ? "the engine failed this request" : f.error_message;
  return e;
}

}  // namespace strata
