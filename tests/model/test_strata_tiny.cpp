// strata-tiny, the shipped default model, against the golden that tools/train/train_tiny.py wrote from
// transformers (the saved bf16 checkpoint reloaded in float32 on the CPU): our tokenizer must give the
// golden prompt ids, and the CPU backend must reproduce every greedy token. The draft model beside it must
// share the target's vocabulary and tokenizer.
//
// The model directory is models/strata-tiny; STRATA_TINY_DIR overrides it (any directory holding a
// golden.json with prompts[{text, ids, greedy}] works, e.g. a test fixture).
#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "engine/cpu/cpu_backend.hpp"
#include "engine/tokenizer/tokenizer.hpp"

using namespace strata;

namespace {

std::string model_dir() {
  const char* env = std::getenv("STRATA_TINY_DIR");
  if (env && *env) return env;
  return std::string(STRATA_SOURCE_DIR) + "/models/strata-tiny";
}

bool is_file(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  REQUIRE(in.good());
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

nlohmann::json golden() { return nlohmann::json::parse(read_text(model_dir() + "/golden.json")); }

// The reference computed RoPE frequencies in float32 unless the golden says otherwise (the older test
// fixtures say nothing and were made with frequencies rounded to their storage dtype).
DType reference_rope_dtype(const nlohmann::json& g) {
  std::string t = g.value("rope_inv_freq_dtype", g.value("storage_dtype", std::string("float32")));
  if (t.rfind("torch.", 0) == 0) t = t.substr(6);
  if (t == "bfloat16") return DType::BF16;
  if (t == "float16") return DType::F16;
  REQUIRE(t == "float32");
  return DType::F32;
}

// Greedy continuation on the CPU backend: the prompt as one window, then one single-row window per token,
// the way the engine drives a backend.
std::vector<TokenId> greedy(CpuBackend& be, SlotId slot, const std::vector<TokenId>& prompt, size_t n) {
  be.reset_slot(slot);
  Window w;
  for (size_t p = 0; p < prompt.size(); ++p) {
    Row r;
    r.slot = slot;
    r.token = prompt[p];
    r.pos = int32_t(p);
    r.want_pick = p + 1 == prompt.size();
    w.rows.push_back(r);
  }
  std::vector<TokenId> out{be.run_window(w).back().pick};
  while (out.size() < n) {
    Row r;
    r.slot = slot;
    r.token = out.back();
    r.pos = int32_t(prompt.size() + out.size() - 1);
    r.want_pick = true;
    out.push_back(be.run_window(Window{{r}})[0].pick);
  }
  return out;
}

}  // namespace

TEST_CASE("strata-tiny ships a golden with prompts and greedy tokens") {
  const nlohmann::json g = golden();
  REQUIRE(g.contains("prompts"));
  REQUIRE(g["prompts"].size() >= 2);
  for (const auto& p : g["prompts"]) {
    CHECK_FALSE(p.at("ids").empty());
    CHECK(p.at("greedy").size() >= 16);
  }
}

TEST_CASE("our tokenizer gives strata-tiny's golden prompt ids, and decodes its greedy text") {
  const nlohmann::json g = golden();
  auto tok = Tokenizer::load(model_dir());
  for (const auto& p : g["prompts"]) {
    const std::string text = p["text"].get<std::string>();
    INFO("prompt: " << text);
    CHECK(tok->encode(text, false) == p["ids"].get<std::vector<TokenId>>());
    if (p.contains("greedy_text"))
      CHECK(tok->decode(p["greedy"].get<std::vector<TokenId>>(), false) == p["greedy_text"].get<std::string>());
  }
}

TEST_CASE("the CPU backend reproduces strata-tiny's greedy golden token for token") {
  const nlohmann::json g = golden();
  auto model = load_model(model_dir());
  CpuBackendOptions opts;
  opts.max_slots = 1;
  opts.max_context = 512;
  opts.threads = 2;
  opts.rope_freq_dtype = reference_rope_dtype(g);
  CpuBackend be(*model, opts);
  const SlotId slot = be.open_slot();
  REQUIRE(slot != kNoSlot);
  be.set_sampling(slot, SamplingParams{0.0f});
  for (const auto& p : g["prompts"]) {
    INFO("prompt: " << p["text"].get<std::string>());
    const auto ids = p["ids"].get<std::vector<TokenId>>();
    const auto want = p["greedy"].get<std::vector<TokenId>>();
    REQUIRE(ids.size() + want.size() <= size_t(opts.max_context));
    const std::vector<TokenId> got = greedy(be, slot, ids, want.size());
    size_t agree = 0;
    while (agree < want.size() && got[agree] == want[agree]) ++agree;
    INFO("first " << agree << " of " << want.size() << " tokens agree");
    CHECK(got == want);
  }
}

TEST_CASE("strata-tiny-draft beside it shares the target's vocabulary and tokenizer") {
  const std::string dir = model_dir();
  const std::string draft = dir + "-draft";
  if (!is_file(draft + "/config.json")) {
    // Only the shipped models/strata-tiny must have its draft; an overriding fixture need not.
    REQUIRE(std::getenv("STRATA_TINY_DIR") != nullptr);
    return;
  }
  auto target = load_model(dir);
  auto d = load_model(draft);
  CHECK(d->config.vocab_size == target->config.vocab_size);
  CHECK(d->config.num_layers < target->config.num_layers);
  CHECK(read_text(draft + "/tokenizer.json") == read_text(dir + "/tokenizer.json"));
}
