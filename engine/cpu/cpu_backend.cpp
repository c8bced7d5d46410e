#include "engine/cpu/cpu_backend.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <new>
#include <string>

#include "engine/cpu/cpu_weights.hpp"
#include "engine/cpu/dot.hpp"
#include "engine/cpu/rope.hpp"
#include "engine/cpu/thread_pool.hpp"
#include "engine/sampling/logprobs.hpp"
#include "engine/sampling/sampler.hpp"

namespace strata {

namespace {

struct Slot {
  bool open = false;
  int committed = 0;             // positions [0, committed) are the slot's history
  std::vector<TokenId> tokens;   // token at each position < committed
  SamplingParams params;
  long last_window = -1;         // the window whose rows commit() may trim
  int last_first = 0, last_count = 0;
  // [layer][position][kv_dim], left uninitialized: a cell is always written by its row before any row
  // reads it, and untouched pages of a long context then cost no memory.
  std::unique_ptr<float[]> k, v;
};

// One slot's rows in a window: positions first .. first + rows.size() - 1.
struct Span {
  SlotId slot;
  int first;
  std::vector<int> rows;  // indices into the window
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
  std::vector<Slot> slots;
  long window_seq = 0;
  int q_dim, kv_dim, qkv_dim;

  Impl(const Model& m, CpuBackendOptions o)
      : cfg(m.config),
        opts(o),
        w(cpu::convert_weights(m)),
        rope(m.config.rope, m.config.head_dim, o.max_context, o.rope_freq_dtype),
        pool(o.threads),
        matmul_kernel(cpu::best_matmul_kernel()),
        dot(cpu::best_dot_kernel()),
        slots(size_t(o.max_slots)) {
    q_dim = cfg.num_heads * cfg.head_dim;
    kv_dim = cfg.num_kv_heads * cfg.head_dim;
    qkv_dim = q_dim + 2 * kv_dim;
  }

  int max_window_rows() const { return std::max(opts.max_context, opts.max_slots); }

  Slot& slot_ref(SlotId s, const char* what) {
    if (s < 0 || s >= int(slots.size()) || !slots[size_t(s)].open)
      throw Error(std::string(what) + ": slot " + std::to_string(s) + " is not open");
    return slots[size_t(s)];
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

  std::vector<Span> check_window(const Window& win) {
    if (int(win.rows.size()) > max_window_rows())
      throw Error("window: " + std::to_string(win.rows.size()) + " rows exceed the backend's max_window_rows " +
                  std::to_string(max_window_rows()));
    std::vector<Span> spans;
    std::map<SlotId, size_t> span_of;
    for (size_t i = 0; i < win.rows.size(); ++i) {
      const Row& r = win.rows[i];
      const std::string where = "window row " + std::to_string(i) + ": ";
      if (r.slot < 0 || r.slot >= int(slots.size()) || !slots[size_t(r.slot)].open)
        throw Error(where + "slot " + std::to_string(r.slot) + " is not open");
      if (r.token < 0 || r.token >= cfg.vocab_size)
        throw Error(where + "token " + std::to_string(r.token) + " is outside the vocabulary (size " +
                    std::to_string(cfg.vocab_size) + ")");
      if (r.pos < 0 || r.pos >= opts.max_context)
        throw Error(where + "position " + std::to_string(r.pos) + " is outside [0, max_context) with max_context " +
                    std::to_string(opts.max_context) + ")");
      auto it = span_of.find(r.slot);
      if (it == span_of.end()) {
        const int committed = slots[size_t(r.slot)].committed;
        if (r.pos != committed)
          throw Error(where + "slot " + std::to_string(r.slot) + " position " + std::to_string(r.pos) +
                      " does not continue its history (committed length " + std::to_string(committed) + ")");
        span_of[r.slot] = spans.size();
        spans.push_back({r.slot, r.pos, {int(i)}});
      } else {
        Span& s = spans[it->second];
        const int expect = s.first + int(s.rows.size());
        if (r.pos != expect)
          throw Error(where + "slot " + std::to_string(r.slot) + " position " + std::to_string(r.pos) +
                      " leaves a gap (expected " + std::to_string(expect) + ")");
        s.rows.push_back(int(i));
      }
    }
    return spans;
  }

  std::vector<RowResult> run(const Window& win) {
    const std::vector<Span> spans = check_window(win);
    const int T = int(win.rows.size());
    std::vector<RowResult> results(static_cast<size_t>(T));
    if (T == 0) return results;

    // The window is valid: its rows become the slots' history (commit() may trim them afterwards).
    ++window_seq;
    for (const Span& s : spans) {
      Slot& sl = slots[size_t(s.slot)];
      sl.tokens.resize(size_t(s.first));
      for (int i : s.rows) sl.tokens.push_back(win.rows[size_t(i)].token);
      sl.committed = s.first + int(s.rows.size());
      sl.last_window = window_seq;
      sl.last_first = s.first;
      sl.last_count = int(s.rows.size());
    }

    const int H = cfg.hidden_size, FF = cfg.intermediate_size, HD = cfg.head_dim;
    std::vector<float> x(size_t(T) * H), xn(size_t(T) * H), qkv(size_t(T) * qkv_dim), att(size_t(T) * q_dim),
        tmp(size_t(T) * H), gu(size_t(T) * 2 * FF), act(size_t(T) * FF);
    for (int r = 0; r < T; ++r)
      std::copy_n(w.embed.data() + size_t(win.rows[size_t(r)].token) * H, H, x.data() + size_t(r) * H);

    const size_t layer_stride = size_t(opts.max_context) * kv_dim;
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
        Slot& sl = slots[size_t(row.slot)];
        std::copy_n(k, kv_dim, &sl.k[l * layer_stride + size_t(row.pos) * kv_dim]);
        std::copy_n(v, kv_dim, &sl.v[l * layer_stride + size_t(row.pos) * kv_dim]);
      }
      // Attention per (row, head): every cache position <= the row's, summed in position order, so a row's
      // result is the same whatever else is in the window.
      int64_t attn_work = 0;
      for (const Row& row : win.rows) attn_work += int64_t(row.pos + 1) * cfg.num_heads * HD;
      auto attend = [&](int b, int e) {
        std::vector<float> score(size_t(opts.max_context));
        for (int task = b; task < e; ++task) {
          const int r = task / cfg.num_heads, h = task % cfg.num_heads, g = h / group;
          const Row& row = win.rows[size_t(r)];
          const Slot& sl = slots[size_t(row.slot)];
          const float* q = &qkv[size_t(r) * qkv_dim + size_t(h) * HD];
          const float* K = &sl.k[l * layer_stride + size_t(g) * HD];
          const float* V = &sl.v[l * layer_stride + size_t(g) * HD];
          float m = -INFINITY;
          for (int t = 0; t <= row.pos; ++t) {
            score[size_t(t)] = dot(q, K + size_t(t) * kv_dim, HD) * scale;
            m = std::max(m, score[size_t(t)]);
          }
          float sum = 0.0f;
          for (int t = 0; t <= row.pos; ++t) {
            score[size_t(t)] = std::exp(score[size_t(t)] - m);
            sum += score[size_t(t)];
          }
          float* o = &att[size_t(r) * q_dim + size_t(h) * HD];
          std::fill_n(o, HD, 0.0f);
          for (int t = 0; t <= row.pos; ++t) {
            const float p = score[size_t(t)];
            const float* vt = V + size_t(t) * kv_dim;
            for (int d = 0; d < HD; ++d) o[d] += p * vt[d];
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

    // Only rows that need an answer pay for the vocabulary projection.
    std::vector<int> out_rows;
    for (int r = 0; r < T; ++r) {
      const Row& row = win.rows[size_t(r)];
      if (row.want_pick || row.want_logits || row.n_logprobs >= 0) out_rows.push_back(r);
    }
    if (out_rows.empty()) return results;
    const int R = int(out_rows.size()), V = cfg.vocab_size;
    std::vector<float> fin(size_t(R) * H), logits(size_t(R) * V);
    for (int i = 0; i < R; ++i)
      rmsnorm(&x[size_t(out_rows[size_t(i)]) * H], w.final_norm.data(), H, &fin[size_t(i) * H]);
    matmul(w.output(), V, H, fin.data(), R, logits.data());
    for (int i = 0; i < R; ++i) {
      const Row& row = win.rows[size_t(out_rows[size_t(i)])];
      RowResult& res = results[size_t(out_rows[size_t(i)])];
      const float* lg = &logits[size_t(i) * V];
      const Slot& sl = slots[size_t(row.slot)];
      if (row.want_pick)
        res.pick = pick_token(lg, V, sl.params, TokenHistory{sl.tokens.data(), size_t(row.pos) + 1}, row.pos);
      if (row.n_logprobs >= 0) compute_logprobs(lg, V, res.pick, row.n_logprobs, &res.pick_logprob, &res.top);
      if (row.want_logits) res.logits.assign(lg, lg + V);
    }
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
  i.max_window_rows = impl_->max_window_rows();
  return i;
}

SlotId CpuBackend::open_slot() {
  for (size_t s = 0; s < impl_->slots.size(); ++s) {
    Slot& sl = impl_->slots[s];
    if (sl.open) continue;
    if (!sl.k) {  // allocated on first use, then kept for the slot's next tenant
      const size_t cells = size_t(impl_->cfg.num_layers) * impl_->opts.max_context * impl_->kv_dim;
      try {
        sl.k.reset(new float[cells]);
        sl.v.reset(new float[cells]);
      } catch (const std::bad_alloc&) {
        sl.k.reset();
        throw Error("cpu backend: cannot allocate the KV cache of a slot (" +
                    std::to_string(2 * cells * sizeof(float) >> 20) + " MiB for max_context " +
                    std::to_string(impl_->opts.max_context) + ")");
      }
    }
    sl.open = true;
    sl.committed = 0;
    sl.tokens.clear();
    sl.params = SamplingParams{};
    sl.last_window = -1;
    return SlotId(s);
  }
  return kNoSlot;
}

void CpuBackend::reset_slot(SlotId s) {
  Slot& sl = impl_->slot_ref(s, "reset_slot");
  sl.committed = 0;
  sl.tokens.clear();
  sl.last_window = -1;
}

void CpuBackend::close_slot(SlotId s) {
  Slot& sl = impl_->slot_ref(s, "close_slot");
  sl.open = false;
  sl.committed = 0;
  sl.tokens.clear();
  sl.last_window = -1;
}

void CpuBackend::set_sampling(SlotId s, const SamplingParams& p) {
  Slot& sl = impl_->slot_ref(s, "set_sampling");
  validate_sampling_params(p, impl_->cfg.vocab_size);
  sl.params = p;
}

std::vector<RowResult> CpuBackend::run_window(const Window& window) { return impl_->run(window); }

void CpuBackend::commit(SlotId s, int n_keep) {
  Slot& sl = impl_->slot_ref(s, "commit");
  if (sl.last_window != impl_->window_seq)
    throw Error("commit: slot " + std::to_string(s) + " had no rows in the last window");
  if (n_keep < 0 || n_keep > sl.last_count)
    throw Error("commit: n_keep " + std::to_string(n_keep) + " for slot " + std::to_string(s) + " is outside [0, " +
                std::to_string(sl.last_count) + "]");
  // Cache cells past the kept rows stay as they are: the next window's rows overwrite them before any read.
  sl.committed = sl.last_first + n_keep;
  sl.tokens.resize(size_t(sl.committed));
  sl.last_count = n_keep;
}

const char* CpuBackend::kernel_name() const { return cpu::matmul_kernel_name(impl_->matmul_kernel); }
int CpuBackend::threads() const { return impl_->pool.size(); }

}  // namespace strata
