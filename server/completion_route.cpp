// POST /v1/completions: each prompt (text or token ids) becomes n engine requests; choices are indexed
// prompt-major (prompt i, sample j -> index i*n + j) as the OpenAI API does. `echo` prepends the prompt
// text, and with logprobs also the prompt tokens' logprobs (the first prompt token has none: null).
#include <algorithm>
#include <memory>

#include "server/engine_port.hpp"
#include "server/generation_common.hpp"
#include "server/generation_job.hpp"
#include "server/openai/completion_request.hpp"
#include "server/openai/fields.hpp"
#include "server/openai/sse.hpp"
#include "server/route.hpp"
#include "server/token_codec.hpp"

namespace strata {
namespace {

struct CompletionPlan {
  CompletionRequest req;
  std::vector<std::vector<TokenId>> prompts;  // tokenized, one per prompt
  std::vector<std::string> prompt_texts;      // for echo
  ResponseHeader header;
};

CompletionPlan plan_completion(const RouteEnv& env, const nlohmann::json& body) {
  CompletionPlan p;
  p.req = parse_completion_request(body, env.limits);
  p.header = make_header("cmpl-", resolve_model(env, p.req.gen.model));
  require_engine(env);
  for (size_t i = 0; i < p.req.prompts.size(); ++i) {
    const PromptInput& in = p.req.prompts[i];
    std::string param = p.req.prompts.size() == 1 ? "prompt" : "prompt[" + std::to_string(i) + "]";
    std::vector<TokenId> ids;
    if (in.is_tokens) {
      ids = in.tokens;
    } else {
      try {
        ids = env.codec->encode(in.text, true);
      } catch (const Error& e) {
        throw_invalid(param, qname(param) + " could not be tokenized: " + e.what());
      }
    }
    check_prompt_length(env, ids.size(), param, p.req.max_tokens_given ? p.req.gen.max_tokens : std::nullopt);
    p.prompt_texts.push_back(p.req.echo ? (in.is_tokens ? env.codec->decode(ids, false) : in.text) : std::string());
    p.prompts.push_back(std::move(ids));
  }
  return p;
}

std::string completion_finish_reason(const FinishEvent& f) { return f.reason == FinishReason::Length ? "length" : "stop"; }

std::unique_ptr<GenerationJob> make_job(const RouteEnv& env, const CompletionPlan& p) {
  std::vector<std::shared_ptr<GenerationRequest>> all;
  bool prompt_lp = p.req.echo && p.req.logprobs >= 0;
  for (size_t i = 0; i < p.prompts.size(); ++i) {
    GenerationOptions g = p.req.gen;
    // The implicit default of 16 shrinks to what the context leaves rather than refusing the prompt.
    if (!p.req.max_tokens_given && env.max_context > 0)
      g.max_tokens = std::min(*g.max_tokens, env.max_context - static_cast<int>(p.prompts[i].size()));
    auto rs = make_requests(env, g, p.prompts[i], p.req.logprobs, prompt_lp, p.header.id,
                            static_cast<int>(i) * p.req.gen.n);
    all.insert(all.end(), rs.begin(), rs.end());
  }
  return std::make_unique<GenerationJob>(std::move(all));
}

// Prompt logprobs for echo: the engine reports one entry per prompt token, the first without a logprob.
void add_prompt_logprobs(const RouteEnv& env, const CompletionPlan& p, const FinishEvent& f, size_t prompt_index,
                         CompletionLogprobs& lp) {
  const std::vector<TokenId>& ids = p.prompts[prompt_index];
  for (size_t k = 0; k < ids.size(); ++k) {
    TokenEvent t;
    t.token = ids[k];
    bool has = false;
    if (k < f.prompt_logprobs.size() && k > 0) {
      t = f.prompt_logprobs[k];
      t.token = ids[k];
      has = true;
    }
    lp.add(*env.codec, t, p.req.logprobs, has);
  }
}

int usage_prompt_tokens(const CompletionPlan& p) {
  int total = 0;
  for (const auto& ids : p.prompts) total += static_cast<int>(ids.size());
  return total;
}

RouteResponse completion_whole(const RouteEnv& env, CompletionPlan& p, GenerationJob& job, const CallContext& call) {
  size_t n = job.size();
  int per_prompt = p.req.gen.n;
  std::vector<std::vector<TokenEvent>> toks(n);
  WholeAnswer whole;
  if (auto failed = collect_whole(env, job, call, &whole, [&](size_t i, const TokenEvent& t) {
        if (p.req.logprobs >= 0) toks[i].push_back(t);
      }))
    return *failed;
  const std::vector<std::string>& text = whole.text;
  const std::vector<FinishEvent>& fin = whole.finish;
  std::vector<CompletionChoice> choices;
  int completion = 0, cached = 0;
  for (size_t i = 0; i < n; ++i) {
    size_t prompt_index = i / per_prompt;
    if (i % size_t(per_prompt) == 0) cached += fin[i].cached_prompt_tokens;  // a prompt's n choices share it
    CompletionChoice c;
    c.index = static_cast<int>(i);
    c.text = p.req.echo ? p.prompt_texts[prompt_index] + text[i] : text[i];
    c.finish_reason = completion_finish_reason(fin[i]);
    if (p.req.logprobs >= 0) {
      CompletionLogprobs lp;
      if (p.req.echo) add_prompt_logprobs(env, p, fin[i], prompt_index, lp);
      for (const TokenEvent& t : toks[i]) lp.add(*env.codec, t, p.req.logprobs, true);
      c.logprobs = lp.to_json();
    }
    completion += fin[i].completion_tokens;
    choices.push_back(std::move(c));
  }
  return json_response(completion_json(p.header, choices, usage_json(usage_prompt_tokens(p), completion, cached)));
}

using CompletionStream = GenerationStream<CompletionPlan>;

int run_completion_stream(CompletionStream& s, const std::function<bool(const std::string&)>& write) {
  const RouteEnv& env = *s.env;
  CompletionPlan& p = s.plan;
  GenerationJob& job = *s.job;
  size_t n = job.size();
  int per_prompt = p.req.gen.n;
  SseSession sse(env, s.call, job, write);
  auto send = [&](const nlohmann::json& j) { sse.send(j); };
  auto send_token = [&](const nlohmann::json& j) { sse.send_token(j); };
  std::vector<size_t> offsets(n, 0);
  int cached = 0;
  // Echo without prompt logprobs can go out at once; with them it waits for the engine's prompt scores.
  bool echo_now = p.req.echo && p.req.logprobs < 0;
  if (echo_now)
    for (size_t i = 0; i < n; ++i) send(completion_chunk_json(p.header, static_cast<int>(i), p.prompt_texts[i / per_prompt], "", nullptr));
  int completion = 0;
  std::vector<std::vector<TokenEvent>> pending(n);  // tokens held until the prompt logprobs arrive (echo+logprobs)
  while (!job.finished() && sse.client_ok()) {
    auto ev = job.wait(sse.stop());
    if (!ev) break;
    auto& [i, e] = *ev;
    int idx = static_cast<int>(i);
    bool hold = p.req.echo && p.req.logprobs >= 0;
    if (e.token) {
      if (hold) {
        pending[i].push_back(*e.token);
      } else {
        nlohmann::json lp = nullptr;
        if (p.req.logprobs >= 0) {
          CompletionLogprobs one;
          one.offset = offsets[i];
          one.add(*env.codec, *e.token, p.req.logprobs, true);
          offsets[i] = one.offset;
          lp = one.to_json();
        }
        // One chunk a generated token, as vLLM streams them: a token whose text is not complete yet (part of a
        // UTF-8 character, a skipped special token, text held while it may begin a stop string) goes out as
        // "" now, its bytes with a later token. The client sees every token when it is made.
        send_token(completion_chunk_json(p.header, idx, e.token->text, "", lp));
      }
    }
    if (e.finish) {
      const FinishEvent& f = *e.finish;
      if (is_failure(f)) {
        ApiError err = finish_error(f);
        job.cancel();
        send(error_body(err));
        return err.status;
      }
      if (hold) {
        CompletionLogprobs lp;
        add_prompt_logprobs(env, p, f, i / per_prompt, lp);
        std::string text = p.prompt_texts[i / per_prompt];
        for (const TokenEvent& t : pending[i]) {
          lp.add(*env.codec, t, p.req.logprobs, true);
          text += t.text;
        }
        send_token(completion_chunk_json(p.header, idx, text, "", lp.to_json()));
      }
      send(completion_chunk_json(p.header, idx, f.text, completion_finish_reason(f), nullptr));
      completion += f.completion_tokens;
      if (i % size_t(per_prompt) == 0) cached += f.cached_prompt_tokens;
    }
  }
  return sse.finish(p.req.gen.include_usage
                            ? completion_usage_chunk_json(p.header, usage_json(usage_prompt_tokens(p), completion, cached))
                            : nlohmann::json());
}

}  // namespace

RouteResponse completions_route(const RouteEnv& env, const nlohmann::json& body, const CallContext& call) {
  CompletionPlan p = plan_completion(env, body);
  auto job = make_job(env, p);
  const bool stream = p.req.gen.stream;
  return answer_generation(env, std::move(p), std::move(job), call, stream, completion_whole, run_completion_stream);
}

}  // namespace strata
