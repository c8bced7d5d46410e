// POST /v1/chat/completions: parse -> render the chat template -> tokenize -> n engine requests -> a
// chat.completion, or a stream of chat.completion.chunk events. Model output goes through the tool-call and
// reasoning parser, which holds back text that may still become a marker, so content, reasoning_content
// and tool_calls come out the same whether streamed or not.
#include <memory>

#include "engine/template/chat_template.hpp"
#include "server/engine_port.hpp"
#include "server/generation_common.hpp"
#include "server/generation_job.hpp"
#include "server/openai/chat_request.hpp"
#include "server/openai/key_order.hpp"
#include "server/openai/reasoning_parser.hpp"
#include "server/openai/sse.hpp"
#include "server/route.hpp"
#include "server/token_codec.hpp"

namespace strata {
namespace {

struct ChatPlan {
  ChatRequest req;
  std::string prompt_text;
  std::vector<TokenId> prompt;
  OutputParserOptions parser;
  ResponseHeader header;
};

ChatPlan plan_chat(const RouteEnv& env, const nlohmann::json& body, const CallContext& call) {
  ChatPlan p;
  p.req = parse_chat_request(body, env.limits);
  p.header = make_header("chatcmpl-", resolve_model(env, p.req.gen.model));
  require_engine(env);
  if (!env.chat_template)
    throw_invalid("messages", "this model has no chat template; use /v1/completions or start with --chat-template",
                  "no_chat_template");
  ChatTemplateOptions topt;
  topt.bos_token = env.tokenizer_meta.bos_token;
  topt.eos_token = env.tokenizer_meta.eos_token;
  topt.add_generation_prompt = p.req.add_generation_prompt;
  topt.extra = p.req.chat_template_kwargs;
  nlohmann::json tools = p.req.tools_active() ? p.req.tools : nlohmann::json();
  try {
    if (call.raw_body) {
      // The body already passed the JSON guard and parser, so this second parse cannot fail or hurt.
      const auto original = nlohmann::ordered_json::parse(*call.raw_body);
      const auto none = nlohmann::ordered_json();
      p.prompt_text = env.chat_template->render_ordered(
          with_key_order_of(p.req.messages, original.value("messages", none)),
          with_key_order_of(tools, original.value("tools", none)), topt);
    } else {
      p.prompt_text = env.chat_template->render(p.req.messages, tools, topt);
    }
  } catch (const TemplateRaise& e) {
    throw_invalid("messages", e.what(), "chat_template_error");
  } catch (const TemplateError& e) {
    throw_invalid("messages", std::string("the chat template could not render these messages: ") + e.what(),
                  "chat_template_error");
  }
  try {
    p.prompt = env.codec->encode(p.prompt_text, false);
  } catch (const Error& e) {
    throw_invalid("messages", std::string("the rendered prompt could not be tokenized: ") + e.what());
  }
  check_prompt_length(env, p.prompt.size(), "messages", p.req.gen.max_tokens);
  if (p.req.tools_active()) {
    p.parser.tool_format = env.tool_format;
    for (const auto& t : p.req.tools) p.parser.tool_names.push_back(t["function"]["name"].get<std::string>());
  }
  p.parser.reasoning = env.reasoning;
  p.parser.starts_in_thought = env.reasoning == ReasoningMode::auto_detect && prompt_opens_thought(p.prompt_text);
  // Tool-call markers are often special tokens: they must survive detokenization for the parser to see them.
  if (p.parser.tool_format != ToolFormat::none) p.req.gen.skip_special_tokens = false;
  return p;
}

std::string chat_finish_reason(const FinishEvent& f, bool tool_calls) {
  if (f.reason == FinishReason::Length) return "length";
  return tool_calls ? "tool_calls" : "stop";
}

RouteResponse chat_whole(const RouteEnv& env, ChatPlan& p, GenerationJob& job, const CallContext& call) {
  size_t n = job.size();
  std::vector<nlohmann::json> lps(n, nlohmann::json::array());
  WholeAnswer whole;
  if (auto failed = collect_whole(env, job, call, &whole, [&](size_t i, const TokenEvent& t) {
        if (p.req.logprobs) lps[i].push_back(chat_logprob_entry(*env.codec, t, p.req.top_logprobs));
      }))
    return *failed;
  const std::vector<std::string>& text = whole.text;
  const std::vector<FinishEvent>& fin = whole.finish;
  std::vector<ChatChoice> choices;
  int completion = 0;
  for (size_t i = 0; i < n; ++i) {
    ChatChoice c;
    c.index = static_cast<int>(i);
    c.message = parse_whole_output(p.parser, text[i]);
    c.finish_reason = chat_finish_reason(fin[i], !c.message.tool_calls.empty());
    c.logprobs = p.req.logprobs ? nlohmann::json{{"content", lps[i]}} : nlohmann::json(nullptr);
    completion += fin[i].completion_tokens;
    choices.push_back(std::move(c));
  }
  int prompt_tokens = fin[0].prompt_tokens > 0 ? fin[0].prompt_tokens : static_cast<int>(p.prompt.size());
  // n > 1 choices share one prompt: its cached share is the first choice's.
  return json_response(
      chat_completion_json(p.header, choices, usage_json(prompt_tokens, completion, fin[0].cached_prompt_tokens)));
}

// Shared by the stream function's copies; owns the job so the engine work lives as long as the stream.
using ChatStream = GenerationStream<ChatPlan>;

int run_chat_stream(ChatStream& s, const std::function<bool(const std::string&)>& write) {
  const RouteEnv& env = *s.env;
  ChatPlan& p = s.plan;
  GenerationJob& job = *s.job;
  size_t n = job.size();
  SseSession sse(env, s.call, job, write);
  auto send = [&](const nlohmann::json& j) { return sse.send(j); };
  std::vector<std::unique_ptr<OutputParser>> parsers;
  for (size_t i = 0; i < n; ++i) {
    parsers.push_back(make_output_parser(p.parser));
    send(chat_chunk_json(p.header, static_cast<int>(i), {{"role", "assistant"}, {"content", ""}}, "", nullptr));
  }
  int completion = 0, prompt_tokens = static_cast<int>(p.prompt.size()), cached = 0;
  while (!job.finished() && sse.client_ok()) {
    auto ev = job.wait(sse.stop());
    if (!ev) break;
    auto& [i, e] = *ev;
    int idx = static_cast<int>(i);
    if (e.token) {
      ParsedDelta d = parsers[i]->feed(e.token->text);
      nlohmann::json lp = nullptr;
      if (p.req.logprobs)
        lp = {{"content", nlohmann::json::array({chat_logprob_entry(*env.codec, *e.token, p.req.top_logprobs)})}};
      if (!d.empty() || !lp.is_null()) sse.send_token(chat_chunk_json(p.header, idx, chat_delta_json(d), "", lp));
    }
    if (e.finish) {
      const FinishEvent& f = *e.finish;
      if (is_failure(f)) {
        ApiError err = finish_error(f);
        job.cancel();
        send(error_body(err));
        return err.status;
      }
      ParsedDelta d = parsers[i]->feed(f.text);
      ParsedDelta tail = parsers[i]->finish();
      d.content += tail.content;
      d.reasoning += tail.reasoning;
      d.tool_calls.insert(d.tool_calls.end(), tail.tool_calls.begin(), tail.tool_calls.end());
      if (!d.empty()) send(chat_chunk_json(p.header, idx, chat_delta_json(d), "", nullptr));
      send(chat_chunk_json(p.header, idx, nlohmann::json::object(), chat_finish_reason(f, parsers[i]->saw_tool_calls()),
                           nullptr));
      completion += f.completion_tokens;
      if (f.prompt_tokens > 0) prompt_tokens = f.prompt_tokens;
      if (i == 0) cached = f.cached_prompt_tokens;
    }
  }
  return sse.finish(p.req.gen.include_usage
                            ? chat_usage_chunk_json(p.header, usage_json(prompt_tokens, completion, cached))
                            : nlohmann::json());
}

}  // namespace

RouteResponse chat_completions_route(const RouteEnv& env, const nlohmann::json& body, const CallContext& call) {
  ChatPlan p = plan_chat(env, body, call);
  int logprobs = p.req.logprobs ? p.req.top_logprobs : -1;
  auto job = std::make_unique<GenerationJob>(make_requests(env, p.req.gen, p.prompt, logprobs, false, p.header.id, 0));
  const bool stream = p.req.gen.stream;
  return answer_generation(env, std::move(p), std::move(job), call, stream, chat_whole, run_chat_stream);
}

}  // namespace strata
