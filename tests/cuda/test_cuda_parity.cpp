// Reference parity (DESIGN.md invariant 4) for the CUDA backend: on every fixture with a transformers
// golden.json, each prompt as one window gives logits within 2e-2 (relative to the row's largest logit) of
// the CPU backend's and of the golden's top logits, and 32 greedy single-row steps give exactly the golden's
// tokens and the CPU backend's; on the skinny path and with every matmul on cuBLAS.
#include <catch2/catch.hpp>

#include "cuda/cuda_backend.hpp"
#include "engine/cpu/cpu_backend.hpp"
#include "tests/cuda/cuda_test_util.hpp"

using namespace strata;
using namespace strata::cuda_test;

namespace {

constexpr float kRel = 2e-2f;

Window prompt_window(SlotId slot, const std::vector<TokenId>& ids) {
  Window w;
  for (size_t p = 0; p < ids.size(); ++p) w.rows.push_back(row(slot, ids[p], int(p), true, p + 1 == ids.size()));
  return w;
}

std::vector<TokenId> greedy_continuation(Backend& be, SlotId slot, TokenId first, int start_pos, size_t n) {
  std::vector<TokenId> out{first};
  while (out.size() < n) {
    Row r = row(slot, out.back(), start_pos + int(out.size()) - 1, false, true);
    out.push_back(be.run_window(Window{{r}})[0].pick);
  }
  return out;
}

}  // namespace

TEST_CASE("the fixture checkpoints with goldens are present for the CUDA parity test") {
  // The parity test below would pass vacuously without them.
  CHECK(golden_dirs().size() >= 4);
}

TEST_CASE("CUDA backend matches the CPU backend and transformers on every golden fixture") {
  REQUIRE(CudaBackend::device_count() > 0);
  // 65: every window here on the skinny kernel (the exact path); 1: every matmul, single rows included, on
  // cuBLAS with split activations (the server's decode path when neither speculation nor --batch-invariant is
  // on; its prompt chunks of 17+ rows take bf16 activations, the tolerance path of the next test case, and
  // that alone moves greedy tokens of these random-weight fixtures, so here every prompt is split too).
  // 1 with the fused GEMV: single rows on the fused kernel (fp32 activations), the rest as with 1; and with
  // the one-row attention kernel too; or with the tensor-core attention's lean variant. 17 with fused GEMV
  // rows 16: windows of up to 16 rows on the fused GEMV (a draft model's backend), prompts of 17+ on cuBLAS.
  // Both KV dtypes, each against the CPU backend storing K/V the same way; transformers' greedy tokens (an
  // fp32 cache) are the reference for the fp32 cache only, its logits for both.
  const int path = GENERATE(0, 1, 2, 3, 4, 5);
  const int gemm_min_rows = path == 0 ? 65 : path == 5 ? kServerGemmMinRows : 1;
  const bool fused_gemv = path >= 2, row_attention = path == 3, tc_lean = path == 4;
  const int fused_gemv_rows = path == 5 ? kDraftFusedGemvRows : 0;
  const DType kv = GENERATE(DType::F32, DType::BF16);
  for (const std::string& dir : golden_dirs()) {
    DYNAMIC_SECTION(dir.substr(dir.rfind('/') + 1) << " gemm_min_rows " << gemm_min_rows
                                                   << (fused_gemv ? " fused gemv" : "")
                                                   << (fused_gemv_rows ? " up to 16 rows" : "")
                                                   << (row_attention ? " + row attention" : "")
                                                   << (tc_lean ? " + lean attention" : "") << " kv "
                                                   << dtype_name(kv)) {
      const nlohmann::json golden = read_json(dir + "/golden.json");
      auto model = load_model(dir);
      CpuBackendOptions co{1, 256, 2};
      co.rope_freq_dtype = reference_rope_dtype(golden);
      co.kv_cache_dtype = kv;
      CpuBackend cpu(*model, co);
      CudaBackendOptions go;
      go.max_slots = 1;
      go.max_context = 256;
      go.rope_freq_dtype = co.rope_freq_dtype;
      go.gemm_min_rows = gemm_min_rows;
      go.split_gemm_max_rows = 256;
      go.fused_gemv = fused_gemv;
      go.fused_gemv_rows = fused_gemv_rows;
      go.fused_row_attention = row_attention;
      go.attention_tc_lean = tc_lean ? 1 : 0;
      go.kv_cache_dtype = kv;
      if (kv == DType::BF16 && model->config.head_dim % 8 != 0) {
        CHECK_THROWS_WITH(CudaBackend(*model, go), Catch::Matchers::Contains("needs head_dim to be a multiple of 8"));
        continue;
      }
      CudaBackend gpu(*model, go);
      const SlotId cs = cpu.open_slot(), gs = gpu.open_slot();
      REQUIRE(gs != kNoSlot);
      cpu.set_sampling(cs, SamplingParams{0.0f});
      gpu.set_sampling(gs, SamplingParams{0.0f});
      for (const auto& prompt : golden["prompts"]) {
        INFO("prompt: " << prompt["text"].get<std::string>());
        cpu.reset_slot(cs);
        gpu.reset_slot(gs);
        const auto ids = prompt["ids"].get<std::vector<TokenId>>();
        const auto want_cpu = cpu.run_window(prompt_window(cs, ids));
        const auto got = gpu.run_window(prompt_window(gs, ids));
        REQUIRE(got.size() == ids.size());
        for (size_t p = 0; p < ids.size(); ++p) {
          INFO("pos " << p);
          REQUIRE(int(got[p].logits.size()) == model->config.vocab_size);
          CHECK(max_rel_diff(got[p].logits, want_cpu[p].logits) <= kRel);
        }
        const float tol = kRel * std::max(1.0f, prompt["max_abs_logit"].get<float>());
        for (const auto& at : prompt["logits"]) {
          const int pos = at["pos"].get<int>();
          const auto top_ids = at["top_ids"].get<std::vector<TokenId>>();
          const auto top_values = at["top_values"].get<std::vector<float>>();
          for (size_t k = 0; k < top_ids.size(); ++k) {
            INFO("pos " << pos << " token " << top_ids[k]);
            CHECK(std::fabs(got[size_t(pos)].logits[size_t(top_ids[k])] - top_values[k]) <= tol);
          }
        }
        const auto want = prompt["greedy"].get<std::vector<TokenId>>();
        const int start = int(ids.size());
        const auto gpu_greedy = greedy_continuation(gpu, gs, got.back().pick, start, want.size());
        const auto cpu_greedy = greedy_continuation(cpu, cs, want_cpu.back().pick, start, want.size());
        if (kv == DType::F32) CHECK(gpu_greedy == want);
        CHECK(gpu_greedy == cpu_greedy);
      }
    }
  }
}

TEST_CASE("prompt chunks on the cuBLAS path stay within tolerance of the CPU backend") {
  REQUIRE(CudaBackend::device_count() > 0);
  // llama stores bf16 (the GEMM takes bf16 activations); qwen2 stores fp32 (exact fp32 GEMM).
  for (auto fixture : {std::make_pair("llama", 2e-2f), std::make_pair("qwen2", 1e-3f)}) {
    DYNAMIC_SECTION(fixture.first) {
      auto model = load_model(models_dir() + "/" + fixture.first);
      const int n = 100;
      CpuBackend cpu(*model, CpuBackendOptions{1, 128, 2});
      CudaBackendOptions go;
      go.max_slots = 1;
      go.max_context = 128;
      go.max_window_rows = 128;
      go.max_output_rows = 128;
      go.gemm_min_rows = 65;
      go.kv_cache_dtype = DType::F32;  // the CPU backend's default: this compares the matmul paths
      CudaBackend gpu(*model, go);
      const auto p = prompt_tokens(n, model->config.vocab_size, 9);
      const auto want = cpu.run_window(chunk(cpu.open_slot(), p, 0, n));
      const SlotId gs = gpu.open_slot();
      const auto got = gpu.run_window(chunk(gs, p, 0, n));
      for (int i = 0; i < n; ++i) {
        INFO("pos " << i);
        CHECK(max_rel_diff(got[size_t(i)].logits, want[size_t(i)].logits) <= fixture.second);
      }
      // Decode rows after a GEMM-path prompt read its KV cells: still within tolerance.
      const auto next_cpu = cpu.run_window(Window{{row(0, 5, n)}});
      const auto next_gpu = gpu.run_window(Window{{row(gs, 5, n)}});
      CHECK(max_rel_diff(next_gpu[0].logits, next_cpu[0].logits) <= fixture.second);
    }
  }
}

TEST_CASE("decode batches on the split-activation cuBLAS path stay within 1e-4 of the skinny kernel") {
  REQUIRE(CudaBackend::device_count() > 0);
  // The server's path without speculation: every window on cuBLAS, activations as bf16 hi + remainder up to
  // split_gemm_max_rows rows. bf16 activations alone put decode logits ~1e-2 (relative) off the fp32
  // product; the split keeps them at fp32 accumulation error, which is what lets greedy tokens match the CPU
  // backend (the golden test above). 8 slots, a 24-token prompt each, then decode windows of all 8 slots.
  auto model = load_model(models_dir() + "/llama");
  auto make = [&](int gemm_min_rows) {
    CudaBackendOptions o;
    o.max_slots = 8;
    o.max_context = 64;
    o.max_window_rows = 256;
    o.max_output_rows = 64;
    o.gemm_min_rows = gemm_min_rows;
    return std::make_unique<CudaBackend>(*model, o);
  };
  auto skinny = make(65), split = make(1);
  const int slots = 8, n = 24;
  std::vector<SlotId> a, b;
  for (int s = 0; s < slots; ++s) {
    a.push_back(skinny->open_slot());
    b.push_back(split->open_slot());
  }
  Window pa, pb;  // every slot's prompt in one 192-row window: past split_gemm_max_rows, the plain bf16 GEMM
  for (int s = 0; s < slots; ++s) {
    const auto p = prompt_tokens(n, model->config.vocab_size, 40 + s);
    for (int i = 0; i < n; ++i) {
      pa.rows.push_back(row(a[size_t(s)], p[size_t(i)], i, false));
      pb.rows.push_back(row(b[size_t(s)], p[size_t(i)], i, false));
    }
  }
  // Prompts through the same path on both (the skinny backend's 192-row window also runs on cuBLAS), so the
  // decode steps below compare the matmul paths alone.
  skinny->run_window(pa);
  split->run_window(pb);
  float worst = 0.0f;
  for (int step = 0; step < 4; ++step) {
    Window da, db;
    for (int s = 0; s < slots; ++s) {
      const TokenId t = TokenId((7 * s + 3 * step + 1) % model->config.vocab_size);
      da.rows.push_back(row(a[size_t(s)], t, n + step));
      db.rows.push_back(row(b[size_t(s)], t, n + step));
    }
    const auto ga = skinny->run_window(da), gb = split->run_window(db);
    for (int s = 0; s < slots; ++s) worst = std::max(worst, max_rel_diff(gb[size_t(s)].logits, ga[size_t(s)].logits));
  }
  INFO("worst relative logit difference " << worst);
  CHECK(worst <= 1e-4f);
}
