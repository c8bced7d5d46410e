#include "cuda/device_weights.hpp"

#include <spdlog/spdlog.h>

#include <chrono>
#include <cstring>

#include "engine/model/bf16.hpp"
#include "engine/model/model_tensors.hpp"

namespace strata {
namespace cuda {
namespace {

constexpr size_t kAlign = 256;
constexpr size_t kStagingBytes = size_t(64) << 20;

// One tensor's destination: `as_f32` says whether it lands as fp32 or bf16.
struct Piece {
  const TensorView* t;
  size_t offset;
  bool as_f32;
};

class Uploader {
 public:
  Uploader(size_t total) : total_(total), staging_(kStagingBytes, "weight staging"), t0_(clock::now()) {}

  void upload(const Piece& p, char* base) {
    char* dst = base + p.offset;
    const TensorView& t = *p.t;
    const size_t n = size_t(t.numel());
    const size_t esize = p.as_f32 ? 4 : 2;
    // BF16 -> bf16 and F32 -> fp32 are plain copies; everything else is widened first (exactly).
    std::vector<float> wide;
    const bool raw = (!p.as_f32 && t.dtype == DType::BF16) || (p.as_f32 && t.dtype == DType::F32);
    if (!raw) wide = t.to_f32();
    const size_t per_chunk = kStagingBytes / esize;
    for (size_t first = 0; first < n; first += per_chunk) {
      const size_t count = std::min(per_chunk, n - first);
      char* stage = staging_.get<char>();
      if (raw) {
        std::memcpy(stage, static_cast<const char*>(t.data) + first * esize, count * esize);
      } else if (p.as_f32) {
        std::memcpy(stage, wide.data() + first, count * 4);
      } else {
        uint16_t* o = reinterpret_cast<uint16_t*>(stage);
        for (size_t i = 0; i < count; ++i) o[i] = bf16_bits(wide[first + i]);
      }
      STRATA_CUDA_CHECK(cudaMemcpy(dst + first * esize, stage, count * esize, cudaMemcpyHostToDevice));
      done_ += count * esize;
      report(false);
    }
  }

  void report(bool last) {
    const double pct = total_ ? 100.0 * double(done_) / double(total_) : 100.0;
    if (!last && pct < next_pct_) return;
    const double s = std::chrono::duration<double>(clock::now() - t0_).count();
    spdlog::info("cuda: weights {:.0f}% ({:.2f} of {:.2f} GB, {:.2f} GB/s)", pct, double(done_) / 1e9,
                 double(total_) / 1e9, s > 0 ? double(done_) / 1e9 / s : 0.0);
    while (next_pct_ <= pct) next_pct_ += 10.0;
  }

 private:
  using clock = std::chrono::steady_clock;
  size_t total_, done_ = 0;
  double next_pct_ = 10.0;
  PinnedBuffer staging_;
  clock::time_point t0_;
};

}  // namespace

DeviceWeights upload_weights(const Model& model, bool round_to_bf16) {
  const ModelConfig& c = model.config;
  const Checkpoint& ck = *model.checkpoint;
  const int64_t h = c.hidden_size, q = int64_t(c.num_heads) * c.head_dim, kv = int64_t(c.num_kv_heads) * c.head_dim;
  const int64_t ff = c.intermediate_size, v = c.vocab_size;

  // One dtype for every matrix keeps one kernel family per model: bf16 unless exact values need fp32.
  bool all_bf16 = true;
  for (const TensorSpec& s : required_tensors(c))
    if (s.shape.size() == 2 && ck.get(s.name).dtype != DType::BF16) all_bf16 = false;
  DeviceWeights w;
  w.type = (all_bf16 || round_to_bf16) ? WType::BF16 : WType::F32;
  const size_t msize = wtype_bytes(w.type);

  std::vector<Piece> pieces;
  size_t cursor = 0;
  auto place = [&](const TensorView& t, bool as_f32) {
    cursor = (cursor + kAlign - 1) / kAlign * kAlign;
    pieces.push_back({&t, cursor, as_f32});
    cursor += size_t(t.numel()) * (as_f32 ? 4 : msize);
    return pieces.size() - 1;
  };
  // Stacked matrices are consecutive pieces with no padding between them: place them back to back.
  auto place_stack = [&](std::vector<const TensorView*> parts, bool as_f32) {
    cursor = (cursor + kAlign - 1) / kAlign * kAlign;
    const size_t first = pieces.size();
    for (const TensorView* t : parts) {
      pieces.push_back({t, cursor, as_f32});
      cursor += size_t(t->numel()) * (as_f32 ? 4 : msize);
    }
    return first;
  };
  const bool mat_f32 = w.type == WType::F32;
  auto vec = [&](const TensorView& t) { return place(t, true); };
  auto mat = [&](const TensorView& t) { return place(t, w.type == WType::F32); };

  struct LayerIdx {
    size_t attn_norm, wqkv, bqkv = SIZE_MAX, q_norm = SIZE_MAX, k_norm = SIZE_MAX, wo, bo = SIZE_MAX, mlp_norm, wgu,
                              wdown;
  };
  const size_t embed_i = mat(ck.get("model.embed_tokens.weight", {v, h}));
  const size_t fc_i = c.feature_input ? mat(ck.get("model.fc.weight", {h, 2 * h})) : SIZE_MAX;
  std::vector<LayerIdx> li;
  for (int l = 0; l < c.num_layers; ++l) {
    auto get = [&](const char* suffix, std::vector<int64_t> shape) -> const TensorView& {
      return ck.get(layer_tensor(l, suffix), shape);
    };
    LayerIdx x;
    x.attn_norm = vec(get("input_layernorm.weight", {h}));
    x.wqkv = place_stack({&get("self_attn.q_proj.weight", {q, h}), &get("self_attn.k_proj.weight", {kv, h}),
                          &get("self_attn.v_proj.weight", {kv, h})},
                         mat_f32);
    if (c.attention_bias)
      x.bqkv = place_stack({&get("self_attn.q_proj.bias", {q}), &get("self_attn.k_proj.bias", {kv}),
                            &get("self_attn.v_proj.bias", {kv})},
                           true);
    if (c.qk_norm) {
      x.q_norm = vec(get("self_attn.q_norm.weight", {c.head_dim}));
      x.k_norm = vec(get("self_attn.k_norm.weight", {c.head_dim}));
    }
    x.wo = mat(get("self_attn.o_proj.weight", {h, q}));
    if (c.o_proj_bias) x.bo = vec(get("self_attn.o_proj.bias", {h}));
    x.mlp_norm = vec(get("post_attention_layernorm.weight", {h}));
    x.wgu = place_stack({&get("mlp.gate_proj.weight", {ff, h}), &get("mlp.up_proj.weight", {ff, h})}, mat_f32);
    x.wdown = mat(get("mlp.down_proj.weight", {h, ff}));
    li.push_back(x);
  }
  const size_t final_i = vec(ck.get("model.norm.weight", {h}));
  const size_t head_i = c.tie_word_embeddings ? embed_i : mat(ck.get("lm_head.weight", {v, h}));
  w.bytes = cursor;
  w.storage = DeviceBuffer(cursor, "model weights");
  char* base = w.storage.get<char>();
  Uploader up(cursor);
  for (const Piece& p : pieces) up.upload(p, base);
  up.report(true);

  auto fptr = [&](size_t i) { return i == SIZE_MAX ? nullptr : reinterpret_cast<const float*>(base + pieces[i].offset); };
  auto mptr = [&](size_t i, int64_t rows, int64_t cols) {
    return DeviceMatrix{base + pieces[i].offset, w.type, int(rows), int(cols)};
  };
  w.embed = mptr(embed_i, v, h);
  if (fc_i != SIZE_MAX) w.fc = mptr(fc_i, h, 2 * h);
  w.output = mptr(head_i, v, h);
  for (const LayerIdx& x : li) {
    DeviceLayer L;
    L.attn_norm = fptr(x.attn_norm);
    L.wqkv = mptr(x.wqkv, q + 2 * kv, h);
    L.bqkv = fptr(x.bqkv);
    L.q_norm = fptr(x.q_norm);
    L.k_norm = fptr(x.k_norm);
    L.wo = mptr(x.wo, h, q);
    L.bo = fptr(x.bo);
    L.mlp_norm = fptr(x.mlp_norm);
    L.wgu = mptr(x.wgu, 2 * ff, h);
    L.wdown = mptr(x.wdown, h, ff);
    w.layers.push_back(L);
  }
  w.final_norm = fptr(final_i);
  return w;
}

size_t prepare_feature_fold(DeviceWeights& w, int vocab, int hidden, cudaStream_t stream) {
  if (!w.fc.ptr || w.fc.type != WType::BF16 || w.embed.type != WType::BF16)
    throw Error("cuda weights: the feature fold needs a feature-reading model with bf16 weights");
  const size_t H = size_t(hidden), V = size_t(vocab);
  const size_t feature_bytes = (H * H * 2 + kAlign - 1) / kAlign * kAlign;
  w.fc_storage = DeviceBuffer(feature_bytes + V * H * 4, "feature draft input tables");
  char* base = w.fc_storage.get<char>();
  // fc's feature half: columns [hidden, 2 hidden) of each row.
  STRATA_CUDA_CHECK(cudaMemcpy2DAsync(base, H * 2, static_cast<const char*>(w.fc.ptr) + H * 2, 2 * H * 2, H * 2, H,
                                      cudaMemcpyDeviceToDevice, stream));
  w.fc_feature = DeviceMatrix{base, WType::BF16, hidden, hidden};
  float* table = reinterpret_cast<float*>(base + feature_bytes);
  // fc over [embedding; 0] for every token, a chunk of tokens a launch.
  const size_t chunk = std::min<size_t>(V, 1024);
  DeviceBuffer tokens(chunk * 4, "feature fold tokens"), zeros(chunk * H * 4, "feature fold zeros"),
      xcat(chunk * 2 * H * 4, "feature fold inputs");
  STRATA_CUDA_CHECK(cudaMemsetAsync(zeros.get(), 0, chunk * H * 4, stream));
  std::vector<int32_t> ids(chunk);
  for (size_t first = 0; first < V; first += chunk) {
    const size_t n = std::min(chunk, V - first);
    for (size_t i = 0; i < n; ++i) ids[i] = int32_t(first + i);
    STRATA_CUDA_CHECK(cudaMemcpyAsync(tokens.get(), ids.data(), n * 4, cudaMemcpyHostToDevice, stream));
    launch_feature_input(w.embed.ptr, w.embed.type, hidden, tokens.get<int>(), int(n), zeros.get<float>(),
                         xcat.get<float>(), stream);
    launch_matvec(w.fc.ptr, w.fc.type, hidden, 2 * hidden, xcat.get<float>(), int(n), table + first * H, stream);
    STRATA_CUDA_CHECK(cudaStreamSynchronize(stream));  // ids is rewritten next chunk
  }
  w.fc_embed = table;
  return w.fc_storage.bytes();
}

}  // namespace cuda
}  // namespace strata
