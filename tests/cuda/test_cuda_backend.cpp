// The CUDA backend's contract outside the arithmetic: capacity from the KV budget (refused with a clear error
// when it holds no slot), bad windows refused before any state changes, the slot lifecycle, and one graph
// per window shape, replayed.
#include <catch2/catch.hpp>

#include "cuda/cuda_backend.hpp"
#include "tests/cuda/cuda_test_util.hpp"

using namespace strata;
using namespace strata::cuda_test;
using Catch::Matchers::Contains;

namespace {

// fp32 keys and values, every layer, every position.
double slot_gb(const ModelConfig& c, int context) {
  return double(c.num_layers) * context * c.num_kv_heads * c.head_dim * 4.0 * 2.0 / 1e9;
}

}  // namespace

TEST_CASE("the KV budget decides how many slots fit, and one that holds none is refused") {
  REQUIRE(CudaBackend::device_count() > 0);
  auto model = load_model(models_dir() + "/llama");
  CudaBackendOptions o;
  o.max_slots = 8;
  o.max_context = 64;
  o.kv_cache_gb = 3.5 * slot_gb(model->config, 64);
  CudaBackend three(*model, o);
  CHECK(three.info().max_slots == 3);
  // Three slots plus the scratch slot that padding rows of bucketed windows write.
  CHECK(three.memory().kv_bytes == size_t(4 * slot_gb(model->config, 64) * 1e9 + 0.5));
  CHECK(three.memory().weights_bytes > 0);
  CHECK(three.memory().free_bytes > 0);

  o.kv_cache_gb = 0.5 * slot_gb(model->config, 64);
  CHECK_THROWS_WITH(CudaBackend(*model, o), Contains("holds no slot of max_context 64"));

  o.kv_cache_gb = 0.0;
  o.max_slots = 2;
  CudaBackend two(*model, o);
  CHECK(two.info().max_slots == 2);
  CHECK(two.info().name == "cuda");
  CHECK(two.info().max_context == 64);
  CHECK(two.info().vocab_size == model->config.vocab_size);
}

TEST_CASE("bad options are refused naming the option") {
  REQUIRE(CudaBackend::device_count() > 0);
  auto model = load_model(models_dir() + "/llama");
  CudaBackendOptions o;
  o.max_slots = 0;
  CHECK_THROWS_WITH(CudaBackend(*model, o), Contains("max_slots must be >= 1"));
  o = CudaBackendOptions{};
  o.gpu_memory_fraction = 1.5;
  CHECK_THROWS_WITH(CudaBackend(*model, o), Contains("gpu_memory_fraction must be in [0, 1]"));
  o = CudaBackendOptions{};
  o.device = 999;
  CHECK_THROWS_WITH(CudaBackend(*model, o), Contains("device 999 is outside"));
}

TEST_CASE("bad windows on the GPU throw strata::Error naming the problem and change no state") {
  REQUIRE(CudaBackend::device_count() > 0);
  auto model = load_model(models_dir() + "/qwen2");
  const int V = model->config.vocab_size;
  CudaBackendOptions o;
  o.max_slots = 3;
  o.max_context = 8;
  o.max_window_rows = 8;
  CudaBackend be(*model, o);
  const auto p = prompt_tokens(6, V, 5);
  const SlotId a = be.open_slot(), ref = be.open_slot(), closed = be.open_slot();
  be.close_slot(closed);
  be.run_window(chunk(a, p, 0, 4));
  const auto want = be.run_window(chunk(ref, p, 0, 5));

  auto bad = [&](std::vector<Row> rows, const std::string& says) {
    CHECK_THROWS_WITH(be.run_window(Window{rows}), Contains(says));
  };
  bad({row(a, p[4], 4), row(99, 1, 0)}, "slot 99 is not open");
  bad({row(a, p[4], 4), row(closed, 1, 0)}, "slot 2 is not open");
  bad({row(a, p[4], 5)}, "does not continue its history (committed length 4)");
  bad({row(a, p[4], 4), row(a, p[5], 6)}, "leaves a gap (expected 5)");
  bad({row(a, p[4], 4), row(a, p[5], 5), row(ref, 1, 5), row(ref, 2, 6), row(ref, 3, 7), row(ref, 4, 8)},
      "outside [0, max_context)");
  bad({row(a, V, 4)}, "token " + std::to_string(V) + " is outside the vocabulary");
  bad(std::vector<Row>(9, row(a, 1, 4)), "exceed the backend's max_window_rows 8");

  const auto got = be.run_window(chunk(a, p, 4, 1));
  CHECK(same_bits(got[0].logits, want[4].logits));
}

TEST_CASE("slots open up to capacity; close frees one; reset forgets the history") {
  REQUIRE(CudaBackend::device_count() > 0);
  auto model = load_model(models_dir() + "/llama");
  CudaBackendOptions o;
  o.max_slots = 2;
  o.max_context = 16;
  CudaBackend be(*model, o);
  const SlotId a = be.open_slot(), b = be.open_slot();
  CHECK(a == 0);
  CHECK(b == 1);
  CHECK(be.open_slot() == kNoSlot);
  be.close_slot(a);
  CHECK(be.open_slot() == a);
  CHECK_THROWS_WITH(be.close_slot(5), Contains("slot 5 is not open"));
  const auto p = prompt_tokens(5, model->config.vocab_size, 6);
  const auto first = be.run_window(chunk(b, p, 0, 5));
  be.reset_slot(b);
  const auto again = be.run_window(chunk(b, p, 0, 5));
  for (int i = 0; i < 5; ++i) CHECK(same_bits(first[size_t(i)].logits, again[size_t(i)].logits));
}

TEST_CASE("each window shape is captured once and then replayed") {
  REQUIRE(CudaBackend::device_count() > 0);
  auto model = load_model(models_dir() + "/llama");
  CudaBackendOptions o;
  o.max_slots = 1;
  o.max_context = 64;
  CudaBackend be(*model, o);
  const SlotId s = be.open_slot();
  be.set_sampling(s, SamplingParams{0.0f});
  CHECK(be.graphs_captured() == 0);
  TokenId t = be.run_window(Window{{row(s, 1, 0, false, true)}})[0].pick;
  CHECK(be.graphs_captured() == 1);
  for (int pos = 1; pos < 20; ++pos) t = be.run_window(Window{{row(s, t, pos, false, true)}})[0].pick;
  CHECK(be.graphs_captured() == 1);  // decode steps all replay the single-row graph
  be.run_window(chunk(s, prompt_tokens(24, model->config.vocab_size, 1), 20, 4));
  CHECK(be.graphs_captured() == 2);
}
