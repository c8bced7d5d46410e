#include "engine/cpu/cpu_backend.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <new>
#include <string>

#include "engine/cpu/cpu_weights.hpp"
#include "engine/cpu/dot.hpp"
#include "engine/cpu/rope.hpp"
#include "engine/cpu/thread_pool.hpp"
#include "engine/model/bf16.hpp"
#include "engine/sampling/row_answers.hpp"
#include "engine/slots/slot_book.hpp"

namespace strata {

namespace {

// The KV pool, [layer][cell][kv_dim] with cell = block * block_size + offset (SlotBook::physical_cell),
// left uninitialized: a cell is always written by its row before any row reads it, and pages no block has
// touched yet cost no memory.
struct KvArena {
  std::unique_ptr<float[]> k, v;
  size_t layer_stride = 0;  // floats per layer
};

}  // namespace

struct CpuBackend::Impl {
  ModelConfig cfg;
  CpuBackendOptions opts;
  cpu::CpuWeights w;
  cpu::RopeTable rope;
  cpu::ThreadPool pool;
  cpu::MatmulKernel matmul_kernel;
  cpu::DotKernel dot;
  SlotBook book;
  KvArena kv;
  int q_dim, kv_dim, qkv_dim;
  bool kv_bf16 = false;  // K and V rounded to bf16 when stored (kv_cache_dtype)

  Impl(const Model& m, CpuBackendOptions o)
      : cfg(m.config),
        opts(o),
        w(cpu::convert_weights(m)),
        rope(m.config.rope, m.config.head_dim, o.max_context, o.rope_freq_dtype),
        pool(o.threads),
        matmul_kernel(cpu::best_matmul_kernel()),
        dot(cpu::best_dot_kernel()),
        book(SlotLimits{o.max_slots, o.max_context, m.config.vocab_size, std::max(o.max_context, o.max_slots)},
             KvPoolLimits{o.kv_block_size, o.kv_blocks, o.prefix_caching}) {
    q_dim = cfg.num_heads * cfg.head_dim;
    kv_dim = cfg.num_kv_heads * cfg.head_dim;
    qkv_dim = q_dim + 2 * kv_dim;
    kv_bf16 = o.kv_cache_dtype == DType::BF16;
    const size_t cells = size_t(book.total_blocks()) * size_t(book.block_size());
    kv.layer_stride = cells * size_t(kv_dim);
    const size_t floats = size_t(cfg.num_layers) * kv.layer_stride;
    try {
      kv.k.reset(new float[floats]);
      kv.v.reset(new float[floats]);
    } catch (const std::bad_alloc&) {
      kv.k.reset();
      throw Error("cpu backend: cannot allocate the KV cache (" + std::to_string(2 * floats * sizeof(float) >> 20) +
                  " MiB for " + std::to_string(book.total_blocks()) + " blocks of " +
                  std::to_string(book.block_size()) + " positions)");
    }
  }

  // Y[rows][out] = X[rows][in] * W^T, parallel over output columns: each element has one owner.
  void matmul(const std::vector<float>& W, int out, int in, const float* X, int rows, float* Y) {
    const int64_t work = int64_t(out) * in * rows;
    if (work < (int64_t(1) << 16) || pool.size() == 1) {
      matmul_kernel(W.data(), in, X, in, rows, Y, out, 0, out);
      return;
    }
    const int blocks = (out + 3) / 4;
    pool.parallel_for(blocks, [&](int b, int e) {
      matmul_kernel(W.data(), in, X, in, rows, Y, out, b * 4, std::min(e * 4, out));
    });
  }

  void rmsnorm(const float* x, const float* weight, int n, float* y) const {
    const float ms = dot(x, x, n) / float(n);
    const float inv = 1.0f / std::sqrt(ms + float(cfg.rms_norm_eps));
    for (int i = 0; i < n; ++i) y[i] = weight[i] * (x[i] * inv);
  }

  std::vector<RowResult> run(const Window& win) {
    // A valid window becomes the slots' history before any arithmetic (commit() may trim it afterwards).
    check_window_features(win, cfg.feature_input, cfg.hidden_size);
    book.accept(win);
    const int T = int(win.rows.size());
    std::vector<RowResult> results(static_cast<size_t>(T));
    if (T == 0) return results;

    const int H = cfg.hidden_size, FF = cfg.intermediate_size, HD = cfg.head_dim;
    std::vector<float> x(size_t(T) * H), xn(size_t(T) * H), qkv(size_t(T) * qkv_dim), att(size_t(T) * q_dim),
        tmp(size_t(T) * H), gu(size_t(T) * 2 * FF), act(size_t(T) * FF);
    if (w.fc.empty()) {
      for (int r = 0; r < T; ++r)
        std::copy_n(w.embed.data() + size_t(win.rows[size_t(r)].token) * H, H, x.data() + size_t(r) * H);
    } else {  // a feature-reading model: x = fc [embedding; feature]
      std::vector<float> in(size_t(T) * 2 * H, 0.0f);
      for (int r = 0; r < T; ++r) {
        float* row = in.data() + size_t(r) * 2 * H;
        std::copy_n(w.embed.data() + size_t(win.rows[size_t(r)].token) * H, H, row);
        if (!win.features.empty()) std::copy_n(win.features.data() + size_t(r) * H, H, row + H);
      }
      matmul(w.fc, H, 2 * H, in.data(), T, x.data());
    }

    const size_t layer_stride = kv.layer_stride;
    const int bs = book.block_size();
    const int group = cfg.num_heads / cfg.num_kv_heads;
    const float scale = 1.0f / std::sqrt(float(HD));
    for (int l = 0; l < cfg.num_layers; ++l) {
      const cpu::CpuLayer& L = w.layers[size_t(l)];
      for (int r = 0; r < T; ++r) rmsnorm(&x[size_t(r) * H], L.attn_norm.data(), H, &xn[size_t(r) * H]);
      matmul(L.wqkv, qkv_dim, H, xn.data(), T, qkv.data());
      for (int r = 0; r < T; ++r) {
        const Row& row = win.rows[size_t(r)];
        float* q = &qkv[size_t(r) * qkv_dim];
        float* k = q + q_dim;
        float* v = k + kv_dim;
        if (!L.bqkv.empty())
          for (int i = 0; i < qkv_dim; ++i) q[i] += L.bqkv[size_t(i)];
        if (!L.q_norm.empty()) {
          for (int h = 0; h < cfg.num_heads; ++h) rmsnorm(q + h * HD, L.q_norm.data(), HD, q + h * HD);
          for (int h = 0; h < cfg.num_kv_heads; ++h) rmsnorm(k + h * HD, L.k_norm.data(), HD, k + h * HD);
        }
        rope.apply(q, cfg.num_heads, row.pos);
        rope.apply(k, cfg.num_kv_heads, row.pos);
        const size_t cell = size_t(book.physical_cell(row.slot, row.pos));
        float* kc = &kv.k[l * layer_stride + cell * kv_dim];
        float* vc = &kv.v[l * layer_stride + cell * kv_dim];
        if (kv_bf16) {
          for (int i = 0; i < kv_dim; ++i) {
            kc[i] = round_bf16(k[i]);
            vc[i] = round_bf16(v[i]);
          }
        } else {
          std::copy_n(k, kv_dim, kc);
          std::copy_n(v, kv_dim, vc);
        }
      }
      // Attention per (row, head): every cache position <= the row's, summed in position order (block by
      // block through the slot's table, which visits positions in the same order), so a row's result is the
      // same whatever else is in the window and wherever its blocks live.
      int64_t attn_work = 0;
      for (const Row& row : win.rows) attn_work += int64_t(row.pos + 1) * cfg.num_heads * HD;
      auto attend = [&](int b, int e) {
        std::vector<float> score(size_t(opts.max_context));
        for (int task = b; task < e; ++task) {
          const int r = task / cfg.num_heads, h = task % cfg.num_heads, g = h / group;
          const Row& row = win.rows[size_t(r)];
          const std::vector<int32_t>& table = book.block_table(row.slot);
          const float* q = &qkv[size_t(r) * qkv_dim + size_t(h) * HD];
          const float* K = &kv.k[l * layer_stride + size_t(g) * HD];
          const float* V = &kv.v[l * layer_stride + size_t(g) * HD];
          const int n = row.pos + 1;
          float m = -INFINITY;
          for (int t0 = 0; t0 < n; t0 += bs) {
            const float* Kb = K + size_t(table[size_t(t0 / bs)]) * size_t(bs) * kv_dim;
            const int e = std::min(bs, n - t0);
            for (int j = 0; j < e; ++j) {
              score[size_t(t0 + j)] = dot(q, Kb + size_t(j) * kv_dim, HD) * scale;
              m = std::max(m, score[size_t(t0 + j)]);
            }
          }
          float sum = 0.0f;
          for (int t = 0; t <= row.pos; ++t) {
            score[size_t(t)] = std::exp(score[size_t(t)] - m);
            sum += score[size_t(t)];
          }
          float* o = &att[size_t(r) * q_dim + size_t(h) * HD];
          std::fill_n(o, HD, 0.0f);
          for (int t0 = 0; t0 < n; t0 += bs) {
            const float* Vb = V + size_t(table[size_t(t0 / bs)]) * size_t(bs) * kv_dim;
            const int e = std::min(bs, n - t0);
            for (int j = 0; j < e; ++j) {
              const float p = score[size_t(t0 + j)];
              const float* vt = Vb + size_t(j) * kv_dim;
              for (int d = 0; d < HD; ++d) o[d] += p * vt[d];
            }
          }
          const float inv = 1.0f / sum;
          for (int d = 0; d < HD; ++d) o[d] *= inv;
        }
      };
      // Waking the pool costs more than a short context's attention; either way each task is whole.
      if (attn_work < (int64_t(1) << 15)) attend(0, T * cfg.num_heads);
      else pool.parallel_for(T * cfg.num_heads, attend);
      matmul(L.wo, H, q_dim, att.data(), T, tmp.data());
      for (int r = 0; r < T; ++r)
        for (int i = 0; i < H; ++i)
          x[size_t(r) * H + i] += tmp[size_t(r) * H + i] + (L.bo.empty() ? 0.0f : L.bo[size_t(i)]);

      for (int r = 0; r < T; ++r) rmsnorm(&x[size_t(r) * H], L.mlp_norm.data(), H, &xn[size_t(r) * H]);
      matmul(L.wgu, 2 * FF, H, xn.data(), T, gu.data());
      for (int r = 0; r < T; ++r)
        for (int i = 0; i < FF; ++i) {
          const float g = gu[size_t(r) * 2 * FF + i], u = gu[size_t(r) * 2 * FF + FF + i];
          act[size_t(r) * FF + i] = g / (1.0f + std::exp(-g)) * u;
        }
      matmul(L.wdown, H, FF, act.data(), T, tmp.data());
      for (size_t i = 0; i < x.size(); ++i) x[i] += tmp[i];
    }

    // Only rows that need an answer pay for the vocabulary projection; rows that want their feature (the
    // final-normed state) get it from the same norm.
    std::vector<int> out_rows, fin_rows;
    for (int r = 0; r < T; ++r) {
      const Row& row = win.rows[size_t(r)];
      const bool answer = row.want_pick || row.want_logits || row.n_logprobs >= 0;
      if (answer) out_rows.push_back(r);
      if (answer || row.want_feature) fin_rows.push_back(r);
    }
    if (fin_rows.empty()) return results;
    const int R = int(out_rows.size()), V = cfg.vocab_size;
    std::vector<float> fin(size_t(R) * H), logits(size_t(R) * V), feature(static_cast<size_t>(H));
    for (int i = 0, o = 0; i < int(fin_rows.size()); ++i) {
      const int r = fin_rows[size_t(i)];
      const bool answer = o < R && out_rows[size_t(o)] == r;
      float* y = answer ? &fin[size_t(o++) * H] : feature.data();
      rmsnorm(&x[size_t(r) * H], w.final_norm.data(), H, y);
      if (win.rows[size_t(r)].want_feature) results[size_t(r)].feature.assign(y, y + H);
    }
    if (R == 0) return results;
    matmul(w.output(), V, H, fin.data(), R, logits.data());
    std::vector<RowAnswer> answers(static_cast<size_t>(R));
    for (int i = 0; i < R; ++i) {
      const Row& row = win.rows[size_t(out_rows[size_t(i)])];
      RowAnswer& a = answers[size_t(i)];
      a.logits = &logits[size_t(i) * V];
      a.params = &book.params(row.slot);
      a.history = book.history(row.slot, row.pos);
      a.pos = row.pos;
      a.want_pick = row.want_pick;
      a.n_logprobs = row.n_logprobs;
      a.want_logits = row.want_logits;
      a.out = &results[size_t(out_rows[size_t(i)])];
    }
    answer_rows(answers, V, [&](int n, const std::function<void(int, int)>& fn) { pool.parallel_for(n, fn); });
    return results;
  }
};

CpuBackend::CpuBackend(const Model& model, CpuBackendOptions o) {
  if (o.max_slots < 1) throw Error("cpu backend: max_slots must be >= 1, found " + std::to_string(o.max_slots));
  if (o.max_context < 1)
    throw Error("cpu backend: max_context must be >= 1, found " + std::to_string(o.max_context));
  if (o.max_context > (1 << 22))
    throw Error("cpu backend: max_context " + std::to_string(o.max_context) + " is above the supported 4194304");
  if (o.max_slots > 4096) throw Error("cpu backend: max_slots " + std::to_string(o.max_slots) + " is above 4096");
  if (o.kv_block_size < 1 || o.kv_block_size > 4096)
    throw Error("cpu backend: kv_block_size must be within [1, 4096], found " + std::to_string(o.kv_block_size));
  if (o.kv_blocks < 0) throw Error("cpu backend: kv_blocks must not be negative, found " + std::to_string(o.kv_blocks));
  if (o.kv_cache_dtype != DType::F32 && o.kv_cache_dtype != DType::BF16)
    throw Error(std::string("cpu backend: kv_cache_dtype must be f32 or bf16, found ") + dtype_name(o.kv_cache_dtype));
  if (!model.checkpoint) throw Error("cpu backend: model has no checkpoint");
  impl_ = std::make_unique<Impl>(model, o);
}

CpuBackend::~CpuBackend() = default;

BackendInfo CpuBackend::info() const {
  BackendInfo i;
  i.name = "cpu";
  i.max_slots = impl_->opts.max_slots;
  i.max_context = impl_->opts.max_context;
  i.vocab_size = impl_->cfg.vocab_size;
  i.max_window_rows = impl_->book.limits().max_window_rows;
  impl_->book.describe_pool(&i);
  return i;
}

SlotId CpuBackend::open_slot() {
  const SlotId s = impl_->book.find_free();
  if (s == kNoSlot) return kNoSlot;
  impl_->book.open(s);
  return s;
}

void CpuBackend::reset_slot(SlotId s) { impl_->book.reset(s); }
void CpuBackend::close_slot(SlotId s) { impl_->book.close(s); }
void CpuBackend::set_sampling(SlotId s, const SamplingParams& p) { impl_->book.set_sampling(s, p); }
int CpuBackend::attach_prefix(SlotId s, const std::vector<TokenId>& prompt) {
  return impl_->book.attach_prefix(s, prompt);
}
std::vector<RowResult> CpuBackend::run_window(const Window& window) { return impl_->run(window); }
void CpuBackend::commit(SlotId s, int n_keep) { impl_->book.commit(s, n_keep); }
int CpuBackend::truncate(SlotId s, int n_keep) { return impl_->book.truncate(s, n_keep); }

const char* CpuBackend::kernel_name() const { return cpu::matmul_kernel_name(impl_->matmul_kernel); }
int CpuBackend::threads() const { return impl_->pool.size(); }

}  // namespace strata
