// HttpServer on cpp-httplib: route table, the gates every request passes before its route (CORS, API key,
// draining), body limits, SSE delivery with disconnect detection, and the SIGTERM drain. Routes themselves
// live in *_route.cpp and know nothing about httplib.
#include "server/server.hpp"

#include <httplib.h>
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>
#include <spdlog/spdlog.h>

#include <atomic>
#include <sys/socket.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <mutex>
#include <optional>
#include <thread>

#include "engine/core/metrics.hpp"
#include "engine/core/thread_name.hpp"
#include "engine/template/chat_template.hpp"
#include "server/api_key.hpp"
#include "server/client_probe.hpp"
#include "server/cors.hpp"
#include "server/engine_port.hpp"
#include "server/openai/json_guard.hpp"
#include "server/openai/sse.hpp"
#include "server/route.hpp"
#include "server/token_codec.hpp"

namespace strata {

struct HttpServer::Impl {
  Impl(ServerOptions o, ServingContext& c) : opt(std::move(o)), ctx(c) {}

  ServerOptions opt;
  ServingContext& ctx;
  httplib::Server svr;
  std::thread listener;
  std::atomic<int> listen_fd{-1};  // the bound listening socket (see start())
  int bound_port = -1;
  std::atomic<bool> draining{false};
  std::atomic<bool> aborting{false};
  std::atomic<int> active{0};  // generation requests whose response (or stream) is not finished

  std::mutex env_mu;
  std::shared_ptr<RouteEnv> env;  // rebuilt when main attaches the engine or tokenizer after start()
  const void* env_engine = nullptr;
  const void* env_codec = nullptr;
  std::unique_ptr<EngineAdapter> adapter;
  std::unique_ptr<TokenizerCodec> codec;

  std::shared_ptr<const RouteEnv> current_env();
  EnginePort* engine_port();
  void record(const std::string& endpoint, int status) {
    if (ctx.metrics) ctx.metrics->request_done(endpoint, status);
  }
  void install_routes();
  void serve_generation(const httplib::Request& req, httplib::Response& res, const std::string& endpoint,
                        RouteResponse (*route)(const RouteEnv&, const nlohmann::json&, const CallContext&));
  void serve_simple(const httplib::Request& req, httplib::Response& res, const std::string& endpoint,
                    RouteResponse (*route)(const RouteEnv&, const nlohmann::json&));
  bool parse_body(const httplib::Request& req, nlohmann::json& out, ApiError& err) const;
  void send(httplib::Response& res, const RouteResponse& r) const {
    res.status = r.status;
    res.set_content(r.body, "application/json");
  }
};

namespace {

// Counts a generation request as active for as long as any copy of its response state lives.
struct ActiveGuard {
  explicit ActiveGuard(std::atomic<int>& a) : n(a) { ++n; }
  ~ActiveGuard() { --n; }
  std::atomic<int>& n;
};

std::string endpoint_label(const std::string& path) {
  static const char* known[] = {"/v1/chat/completions", "/v1/completions", "/v1/models", "/tokenize",
                                "/detokenize",          "/health",         "/ready",     "/metrics"};
  for (const char* k : known)
    if (path == k) return k;
  if (path.rfind("/v1/models/", 0) == 0) return "/v1/models";
  return "other";
}

}  // namespace

EnginePort* HttpServer::Impl::engine_port() {
  if (ctx.engine_port) return ctx.engine_port;
  if (!ctx.engine) return nullptr;
  if (!adapter || env_engine != ctx.engine) adapter = std::make_unique<EngineAdapter>(*ctx.engine);
  return adapter.get();
}

std::shared_ptr<const RouteEnv> HttpServer::Impl::current_env() {
  std::lock_guard<std::mutex> lock(env_mu);
  const void* eng = ctx.engine_port ? static_cast<const void*>(ctx.engine_port) : static_cast<const void*>(ctx.engine);
  const void* cod = ctx.codec ? static_cast<const void*>(ctx.codec) : static_cast<const void*>(ctx.tokenizer);
  if (env && eng == env_engine && cod == env_codec) return env;
  auto e = std::make_shared<RouteEnv>();
  e->engine = engine_port();
  if (ctx.codec) {
    e->codec = ctx.codec;
  } else if (ctx.tokenizer) {
    if (!codec || env_codec != ctx.tokenizer) codec = std::make_unique<TokenizerCodec>(*ctx.tokenizer);
    e->codec = codec.get();
  }
  env_engine = eng;
  env_codec = cod;
  e->chat_template = ctx.chat_template;
  e->tokenizer_meta = ctx.tokenizer_meta;
  if (!opt.served_model_names.empty()) e->model_ids = opt.served_model_names;
  else if (!ctx.model_id.empty()) e->model_ids = {ctx.model_id};
  else e->model_ids = {"strata"};
  e->max_context = ctx.max_context > 0 ? ctx.max_context : (ctx.engine ? ctx.engine->max_context() : 0);
  RequestLimits& l = e->limits;
  l.vocab_size = e->codec ? e->codec->vocab_size() : 0;
  l.max_context = e->max_context;
  l.max_n = opt.max_n;
  l.max_stop_strings = opt.max_stop_strings;
  l.max_tokens_limit = opt.max_tokens_limit;
  l.penalty_window = opt.penalty_window;
  const std::string& src = opt.chat_template_override.empty() ? ctx.tokenizer_meta.chat_template : opt.chat_template_override;
  if (opt.tool_call_parser.empty() || opt.tool_call_parser == "auto") e->tool_format = detect_tool_format(src);
  else e->tool_format = tool_format_from_name(opt.tool_call_parser).value_or(ToolFormat::none);
  e->reasoning = opt.reasoning_format == "none" ? ReasoningMode::none : ReasoningMode::auto_detect;
  e->aborting = &aborting;
  env = e;
  return env;
}

bool HttpServer::Impl::parse_body(const httplib::Request& req, nlohmann::json& out, ApiError& err) const {
  JsonLimits jl;
  jl.max_string_bytes = std::min<size_t>(jl.max_string_bytes * 4, opt.max_body_bytes);
  JsonGuardResult g = check_json(req.body, jl);
  if (!g.ok) {
    err = invalid_param(g.path, g.message, "invalid_json");
    return false;
  }
  try {
    out = nlohmann::json::parse(req.body);
  } catch (const std::exception& e) {
    err = invalid_param("", std::string("invalid JSON body: ") + e.what(), "invalid_json");
    return false;
  }
  return true;
}

void HttpServer::Impl::serve_simple(const httplib::Request& req, httplib::Response& res, const std::string& endpoint,
                                    RouteResponse (*route)(const RouteEnv&, const nlohmann::json&)) {
  auto e = current_env();
  nlohmann::json body;
  ApiError err;
  RouteResponse r;
  if (!parse_body(req, body, err)) {
    r = error_response(err);
  } else {
    try {
      r = route(*e, body);
    } catch (const ApiException& ex) {
      r = error_response(ex.error);
    } catch (const std::exception& ex) {
      r = error_response(internal_error(std::string("unexpected failure: ") + ex.what()));
    }
  }
  send(res, r);
  record(endpoint, r.status);
}

void HttpServer::Impl::serve_generation(const httplib::Request& req, httplib::Response& res, const std::string& endpoint,
                                        RouteResponse (*route)(const RouteEnv&, const nlohmann::json&, const CallContext&)) {
  const auto received = std::chrono::steady_clock::now();
  auto guard = std::make_shared<ActiveGuard>(active);
  auto e = current_env();
  nlohmann::json body;
  ApiError err;
  if (!parse_body(req, body, err)) {
    send(res, error_response(err));
    record(endpoint, err.status);
    return;
  }
  auto probe = std::make_shared<ClientProbe>(req.local_addr, req.local_port, req.remote_addr, req.remote_port);
  CallContext call;
  call.received = received;
  call.client_gone = [probe] { return probe->gone(); };
  call.raw_body = &req.body;
  RouteResponse r;
  try {
    r = route(*e, body, call);
  } catch (const ApiException& ex) {
    r = error_response(ex.error);
  } catch (const std::exception& ex) {
    r = error_response(internal_error(std::string("unexpected failure: ") + ex.what()));
  }
  if (!r.stream) {
    if (r.status >= 500) spdlog::warn("{} answered {}: {}", endpoint, r.status, r.body);
    send(res, r);
    record(endpoint, r.status);
    return;
  }
  res.status = 200;
  res.set_header("Cache-Control", "no-cache");
  res.set_header("X-Accel-Buffering", "no");
  auto recorded = std::make_shared<std::atomic<bool>>(false);
  auto stream = std::make_shared<std::function<int(const std::function<bool(const std::string&)>&)>>(std::move(r.stream));
  // The state (and so the engine job) lives in the provider; env is pinned for the stream's lifetime.
  res.set_chunked_content_provider(
      "text/event-stream",
      [this, stream, recorded, guard, e, endpoint](size_t, httplib::DataSink& sink) {
        int status = (*stream)([&sink](const std::string& s) { return sink.is_writable() && sink.write(s.data(), s.size()); });
        if (!recorded->exchange(true)) record(endpoint, status);
        if (status == 499) return false;  // client gone: drop the connection
        sink.done();
        return true;
      },
      [this, recorded, endpoint](bool) {
        if (!recorded->exchange(true)) record(endpoint, 499);
      });
}

void HttpServer::Impl::install_routes() {
  svr.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
    std::string origin = req.get_header_value("Origin");
    bool preflight = req.method == "OPTIONS";
    for (auto& [k, v] : cors_headers(opt.cors_origins, origin, preflight, req.get_header_value("Access-Control-Request-Headers")))
      res.set_header(k, v);
    if (preflight) {
      res.status = 204;
      return httplib::Server::HandlerResponse::Handled;
    }
    // Probes and scrapes stay open: orchestrators and Prometheus do not carry the API key.
    bool open = req.path == "/health" || req.path == "/ready" || req.path == "/metrics";
    if (open) return httplib::Server::HandlerResponse::Unhandled;
    if (!key_accepted(opt.api_keys, presented_key(req.get_header_value("Authorization"), req.get_header_value("x-api-key")))) {
      send(res, error_response(unauthorized_error()));
      res.set_header("WWW-Authenticate", "Bearer");
      record(endpoint_label(req.path), 401);
      return httplib::Server::HandlerResponse::Handled;
    }
    if (draining.load()) {
      send(res, error_response(unavailable_error("the server is shutting down", "server_draining")));
      record(endpoint_label(req.path), 503);
      return httplib::Server::HandlerResponse::Handled;
    }
    return httplib::Server::HandlerResponse::Unhandled;
  });

  svr.set_error_handler([this](const httplib::Request& req, httplib::Response& res) {
    if (!res.body.empty()) return;
    ApiError e;
    if (res.status == 413) {
      e = body_too_large_error(opt.max_body_bytes);
      record(endpoint_label(req.path), 413);
    } else if (res.status == 404) {
      e = not_found_route_error(req.method, req.path);
    } else if (res.status == 405) {
      e = not_found_route_error(req.method, req.path);
      e.status = 405;
      e.code = "method_not_allowed";
    } else if (res.status == 400) {
      e = invalid_param("", "malformed HTTP request", "bad_request");
    } else {
      e.status = res.status;
      e.message = "HTTP error " + std::to_string(res.status);
      e.type = res.status >= 500 ? "server_error" : "invalid_request_error";
    }
    res.set_content(dump_json(error_body(e)), "application/json");
  });

  svr.set_exception_handler([this](const httplib::Request& req, httplib::Response& res, std::exception_ptr ep) {
    std::string what = "unknown exception";
    try {
      if (ep) std::rethrow_exception(ep);
    } catch (const std::exception& ex) {
      what = ex.what();
    } catch (...) {
    }
    spdlog::error("unhandled exception on {} {}: {}", req.method, req.path, what);
    send(res, error_response(internal_error("internal error: " + what)));
    record(endpoint_label(req.path), 500);
  });

  svr.Get("/health", [this](const httplib::Request&, httplib::Response& res) {
    EnginePort* eng = current_env()->engine;
    RouteResponse r;
    if (!eng) r = error_response(unavailable_error("the model is loading", "model_loading"));
    else if (!eng->healthy()) r = error_response(unavailable_error("the engine is not healthy", "engine_unhealthy"));
    else r = json_response({{"status", "ok"}});
    send(res, r);
  });
  svr.Get("/ready", [this](const httplib::Request&, httplib::Response& res) {
    EnginePort* eng = current_env()->engine;
    RouteResponse r;
    if (draining.load()) r = error_response(unavailable_error("the server is shutting down", "server_draining"));
    else if (!eng) r = error_response(unavailable_error("the model is loading", "model_loading"));
    else if (!eng->ready()) r = error_response(unavailable_error("the engine is not ready (loading or recovering)", "engine_not_ready"));
    else r = json_response({{"status", "ready"}});
    send(res, r);
  });
  svr.Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
    std::string text;
    if (ctx.registry) text = prometheus::TextSerializer().Serialize(ctx.registry->Collect());
    res.set_content(text, "text/plain; version=0.0.4; charset=utf-8");
  });
  svr.Get("/v1/models", [this](const httplib::Request&, httplib::Response& res) {
    RouteResponse r = models_route(*current_env());
    send(res, r);
    record("/v1/models", r.status);
  });
  svr.Get(R"(/v1/models/(.+))", [this](const httplib::Request& req, httplib::Response& res) {
    RouteResponse r;
    try {
      r = model_route(*current_env(), req.matches[1].str());
    } catch (const ApiException& ex) {
      r = error_response(ex.error);
    }
    send(res, r);
    record("/v1/models", r.status);
  });
  svr.Post("/v1/chat/completions", [this](const httplib::Request& req, httplib::Response& res) {
    serve_generation(req, res, "/v1/chat/completions", &chat_completions_route);
  });
  svr.Post("/v1/completions", [this](const httplib::Request& req, httplib::Response& res) {
    serve_generation(req, res, "/v1/completions", &completions_route);
  });
  svr.Post("/tokenize", [this](const httplib::Request& req, httplib::Response& res) {
    serve_simple(req, res, "/tokenize", &tokenize_route);
  });
  svr.Post("/detokenize", [this](const httplib::Request& req, httplib::Response& res) {
    serve_simple(req, res, "/detokenize", &detokenize_route);
  });
}

HttpServer::HttpServer(ServerOptions options, ServingContext& ctx) : impl_(std::make_unique<Impl>(std::move(options), ctx)) {}

HttpServer::~HttpServer() { stop(); }

void HttpServer::start() {
  Impl& m = *impl_;
  if (m.listener.joinable()) throw Error("HTTP server already started");
  m.install_routes();
  int threads = m.opt.http_threads > 0 ? m.opt.http_threads : 32;
  m.svr.new_task_queue = [threads] { return new httplib::ThreadPool(static_cast<size_t>(threads)); };
  m.svr.set_tcp_nodelay(true);  // the first SSE chunk must not wait for Nagle
  m.svr.set_payload_max_length(m.opt.max_body_bytes);
  m.svr.set_keep_alive_max_count(1000);
  m.svr.set_keep_alive_timeout(5);
  m.svr.set_read_timeout(30);
  m.svr.set_write_timeout(30);
  // Our own listening-socket setup: httplib 0.11 listens with a backlog of 5, so a burst of new connections
  // beyond it waits for SYN retransmits (a second or more each), and it sets SO_REUSEPORT, so a second
  // server on the same port would silently share it. SO_REUSEADDR only, and a real backlog once bound.
  std::atomic<int>* fd = &m.listen_fd;
  m.svr.set_socket_options([fd](socket_t sock) {
    int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
    fd->store(sock);  // httplib binds the last socket it prepared, or closes it and fails
  });
  if (m.opt.port == 0) {
    m.bound_port = m.svr.bind_to_any_port(m.opt.host);
    if (m.bound_port <= 0) throw Error("cannot bind a free port on host '" + m.opt.host + "'");
  } else {
    if (!m.svr.bind_to_port(m.opt.host, m.opt.port))
      throw Error("cannot bind " + m.opt.host + ":" + std::to_string(m.opt.port) + " (in use, or not an address of this host)");
    m.bound_port = m.opt.port;
  }
  // Linux lets listen() on a listening socket change its backlog (the kernel caps it at somaxconn).
  if (m.listen_fd.load() >= 0 && ::listen(m.listen_fd.load(), 1024) != 0)
    spdlog::warn("could not raise the listen backlog: {}", std::strerror(errno));
  m.current_env();
  m.listener = std::thread([&m] {
    name_this_thread("strata-http");  // its worker pool, started by listen, takes the name too
    m.svr.listen_after_bind();
  });
  // httplib's stop() does nothing until the listener thread has marked the server running, so a signal
  // right after start() would leave the accept loop running and stop() would hang in join: wait for it.
  for (int i = 0; i < 5000 && !m.svr.is_running(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  if (!m.svr.is_running()) {
    m.listener.join();  // listen_after_bind returned without serving: the thread is done
    throw Error("HTTP listener did not start");
  }
}

int HttpServer::port() const { return impl_->bound_port; }

void HttpServer::drain_and_stop() {
  Impl& m = *impl_;
  m.draining = true;
  if (EnginePort* eng = m.current_env()->engine) eng->start_draining();
  auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(std::max(0.0, m.opt.shutdown_timeout_s));
  while (m.active.load() > 0 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  if (m.active.load() > 0) {
    spdlog::warn("shutdown timeout: ending {} running request(s) with an error", m.active.load());
    m.aborting = true;
    auto grace = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (m.active.load() > 0 && std::chrono::steady_clock::now() < grace)
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  stop();
}

void HttpServer::stop() {
  Impl& m = *impl_;
  if (!m.listener.joinable()) return;
  m.aborting = true;  // handlers still waiting on the engine give up instead of blocking the join
  m.svr.stop();
  m.listener.join();
}

}  // namespace strata
