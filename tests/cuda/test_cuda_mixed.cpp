// Mixed windows (decode rows beside prompt chunks) on the server's GEMM path, on random Llama checkpoints with
// the head sizes the tensor-core and flash attention kernels take (64 and 128; the committed fixtures' heads
// are smaller, so they never reach those kernels): the prompt tiles on flash attention and cut into short
// tiles both stay within tolerance of the CPU backend, and the decode rows beside them keep their bits.
#include <catch2/catch.hpp>

#include <cstring>
#include <random>

#include "cuda/cuda_backend.hpp"
#include "engine/cpu/cpu_backend.hpp"
#include "engine/model/bf16.hpp"
#include "engine/model/model_tensors.hpp"
#include "tests/cuda/cuda_test_util.hpp"
#include "tests/model/safetensors_writer.hpp"

using namespace strata;
using namespace strata::cuda_test;

namespace {

// A Llama directory with bf16 weights drawn uniformly so that every matmul keeps unit-scale activations
// (bound sqrt(3 / fan_in)), norm weights near 1, and embeddings of unit scale.
std::string random_llama(const std::string& name, int head_dim, int heads, int kv_heads, unsigned seed) {
  const std::string d = strata_test::scratch_dir(name);
  nlohmann::json cfg = {{"architectures", {"LlamaForCausalLM"}},
                        {"hidden_size", 512},
                        {"num_hidden_layers", 2},
                        {"num_attention_heads", heads},
                        {"num_key_value_heads", kv_heads},
                        {"head_dim", head_dim},
                        {"intermediate_size", 1024},
                        {"vocab_size", 512},
                        {"rms_norm_eps", 1e-5},
                        {"rope_theta", 10000.0},
                        {"max_position_embeddings", 512},
                        {"tie_word_embeddings", false},
                        {"torch_dtype", "bfloat16"},
                        {"eos_token_id", 2}};
  strata_test::write_text(d + "/config.json", cfg.dump());
  const ModelConfig c = parse_model_config(cfg.dump());
  std::mt19937 rng(seed);
  std::vector<strata_test::FakeTensor> ts;
  for (const TensorSpec& s : required_tensors(c)) {
    int64_t n = 1;
    for (int64_t v : s.shape) n *= v;
    const bool norm = s.shape.size() == 1;
    const bool embed = s.name.find("embed_tokens") != std::string::npos;
    const float bound = norm ? 0.2f : embed ? 1.7f : std::sqrt(3.0f / float(s.shape.back()));
    std::uniform_real_distribution<float> u(-bound, bound);
    strata_test::FakeTensor t{s.name, "BF16", s.shape, std::vector<unsigned char>(size_t(n) * 2)};
    for (int64_t i = 0; i < n; ++i) {
      const uint16_t b = bf16_bits((norm ? 1.0f : 0.0f) + u(rng));
      std::memcpy(&t.bytes[size_t(i) * 2], &b, 2);
    }
    ts.push_back(std::move(t));
  }
  strata_test::write_safetensors(d + "/model.safetensors", ts);
  return d;
}

}  // namespace

TEST_CASE("a mixed window's prompt tiles on flash attention stay within tolerance and leave decode rows' bits") {
  REQUIRE(CudaBackend::device_count() > 0);
  struct Shape {
    int head_dim, heads, kv_heads;
  };
  for (const Shape sh : {Shape{64, 8, 2}, Shape{128, 4, 1}}) {
    DYNAMIC_SECTION("head_dim " << sh.head_dim) {
      auto model = load_model(random_llama("mixed_hd" + std::to_string(sh.head_dim), sh.head_dim, sh.heads,
                                           sh.kv_heads, 7u + unsigned(sh.head_dim)));
      const int vocab = model->config.vocab_size;
      const int decoders = 16, first_prompt = 20;  // two windows of 8 prompts below
      CpuBackendOptions co;
      co.max_slots = decoders + 2;
      co.max_context = 256;
      co.threads = 2;
      co.kv_cache_dtype = DType::BF16;  // the CUDA arena's values
      CpuBackend cpu(*model, co);
      auto make = [&](bool prompt_flash) {
        CudaBackendOptions o;
        o.max_slots = decoders + 2;
        o.max_context = 256;
        o.max_window_rows = 512;
        o.max_output_rows = 64;
        o.gemm_min_rows = 1;  // the server without speculation: every window on cuBLAS
        o.gemm_autotune = false;  // one algorithm per shape on both, so equal inputs give equal bits
        o.kv_cache_dtype = DType::BF16;
        o.attention_prompt_flash = prompt_flash;
        return std::make_unique<CudaBackend>(*model, o);
      };
      auto flash = make(true), cut = make(false);
      // Slots 0..15 decode; P gets an 80-token prompt in two 40-row chunks (tiles of 16, 16, 8 rows: long);
      // Q a 6-token one in two 3-row chunks (one tile within the short tiles' 4 rows).
      std::vector<SlotId> sc, sf, sk;
      for (int s = 0; s < decoders + 2; ++s) {
        sc.push_back(cpu.open_slot());
        sf.push_back(flash->open_slot());
        sk.push_back(cut->open_slot());
      }
      const int P = decoders, Q = decoders + 1;
      auto on = [](const std::vector<SlotId>& ids, const std::vector<Row>& rows) {
        Window w;
        for (Row r : rows) {
          r.slot = ids[size_t(r.slot)];
          w.rows.push_back(r);
        }
        return w;
      };
      for (int half = 0; half < 2; ++half) {  // the decoders' prompts, 8 a window (flash attention whole)
        std::vector<Row> prefill;
        for (int s = 8 * half; s < 8 * half + 8; ++s) {
          const auto p = prompt_tokens(first_prompt, vocab, 60 + s);
          for (int i = 0; i < first_prompt; ++i) prefill.push_back(row(s, p[size_t(i)], i, false));
        }
        cpu.run_window(on(sc, prefill));
        flash->run_window(on(sf, prefill));
        cut->run_window(on(sk, prefill));
      }
      const auto pp = prompt_tokens(80, vocab, 5), qp = prompt_tokens(6, vocab, 6);
      float worst_flash = 0.0f, worst_cut = 0.0f;
      bool prompt_bits_differ = false;
      for (int step = 0; step < 3; ++step) {
        // Steps 0 and 1: 16 decode rows, a 40-row chunk of P, a 3-row chunk of Q (59 rows, a 64-row graph
        // whose padding tile is long too). Step 2: every slot decodes, P and Q from their prompts' KV.
        std::vector<Row> rows;
        for (int s = 0; s < decoders; ++s)
          rows.push_back(row(s, TokenId((11 * s + 5 * step + 3) % vocab), first_prompt + step));
        const int nd = int(rows.size());
        if (step < 2) {
          for (int i = 40 * step; i < 40 * step + 40; ++i) rows.push_back(row(P, pp[size_t(i)], i));
          for (int i = 3 * step; i < 3 * step + 3; ++i) rows.push_back(row(Q, qp[size_t(i)], i));
        } else {
          rows.push_back(row(P, 9, 80));
          rows.push_back(row(Q, 9, 6));
        }
        const auto want = cpu.run_window(on(sc, rows));
        const auto got_f = flash->run_window(on(sf, rows));
        const auto got_k = cut->run_window(on(sk, rows));
        REQUIRE(got_f.size() == rows.size());
        REQUIRE(got_k.size() == rows.size());
        for (size_t i = 0; i < rows.size(); ++i) {
          INFO("step " << step << ", row " << i);
          const float df = max_rel_diff(got_f[i].logits, want[i].logits);
          const float dk = max_rel_diff(got_k[i].logits, want[i].logits);
          worst_flash = std::max(worst_flash, df);
          worst_cut = std::max(worst_cut, dk);
          CHECK(df <= 2e-2f);
          CHECK(dk <= 2e-2f);
          // The decode rows' attention runs in the same tensor-core blocks either way, and no other kernel
          // writes their rows: the same bits. In step 2 every row reads KV that the two paths wrote.
          if (step < 2 && int(i) < nd) CHECK(same_bits(got_f[i].logits, got_k[i].logits));
          if (step < 2 && int(i) >= nd && int(i) < nd + 40 && !same_bits(got_f[i].logits, got_k[i].logits))
            prompt_bits_differ = true;
        }
      }
      INFO("worst relative logit difference to the CPU backend: flash " << worst_flash << ", cut " << worst_cut);
      // Flash attention rounds q and P to bf16 where the tensor-core decode kernel splits them: different bits
      // on the prompt rows show that the flash path ran.
      CHECK(prompt_bits_differ);
      CHECK(worst_flash <= 2e-2f);
    }
  }
}
