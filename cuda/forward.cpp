#include "cuda/forward.hpp"

#include <algorithm>
#include <cmath>

#include "cuda/env.hpp"
#include "cuda/gemm.hpp"
#include "engine/core/types.hpp"

namespace strata {
namespace cuda {

bool gemv_fits(const ModelConfig& c, WType type) {
  return type == WType::BF16 && gemv_supports(c.hidden_size) && gemv_supports(c.num_heads * c.head_dim) &&
         gemv_supports(c.intermediate_size);
}

void record_forward(const ForwardContext& ctx, const WindowShape& shape, cudaStream_t stream, bool draws) {
  const ModelConfig& c = *ctx.cfg;
  const DeviceWeights& w = *ctx.w;
  const Workspace& ws = ctx.ws;
  const MetaLayout L(shape);
  const int T = shape.rows, R = shape.out_rows;
  const int H = c.hidden_size, FF = c.intermediate_size, HD = c.head_dim;
  const int q_dim = c.num_heads * HD, kv_dim = c.num_kv_heads * HD;
  const float eps = float(c.rms_norm_eps);
  const int* tokens = ws.meta + L.tokens;
  const int* pos = ws.meta + L.pos;
  const int* slot = ws.meta + L.slot;
  const int* out_rows = ws.meta + L.out_rows;

  // The path is a function of the shape: every window with this many rows takes the same kernels, and windows
  // below gemm_min_rows take the skinny kernel whose per-row bits do not depend on the row count.
  const bool use_gemm = T >= ctx.gemm_min_rows;
  // A window of a few rows is a weight stream: the fused GEMV reads each matrix once with fp32 activations,
  // and folds the norms, residual adds and SwiGLU into the matmuls (four launches a layer besides RoPE and
  // attention, against nine). It takes windows of up to fused_gemv_rows rows (whose rows keep their bits at
  // every row count, so verify windows there are exact), and one-row windows on the GEMM path (decode without
  // speculation).
  const bool gemv = ctx.fused_gemv && gemv_fits(c, w.type) && (T <= ctx.fused_gemv_rows || (use_gemm && T == 1));
  const bool want16 = use_gemm && !gemv && w.type == WType::BF16;
  // The skinny kernel's windows (bf16 weights, skinny_fold) fold each residual add into the o and down
  // matmuls and each norm but the first into the matmul after it (MatvecFold), through the partial sums of
  // squares in ws.ss and the pre-scaled rows in ws.xn: 2L - 1 fewer launches a window.
  const bool fold = ctx.skinny_fold && !use_gemm && !gemv && w.type == WType::BF16;
  const bool row_attention = gemv && T == 1 && ctx.fused_row_attention &&
                             attention_row_supports(c.num_heads, c.num_kv_heads, HD);
  // Split activations on windows of up to split_gemm_max_rows rows: each bf16 input row comes with its
  // remainder row, so the GEMM has 2T columns, reads the weights once, and the hi and remainder products add up
  // to a near-fp32 product (the skinny kernel's accuracy) where the weights, not the FLOPs, set the time.
  const bool split = want16 && T <= ctx.split_gemm_max_rows;
  const Bf16Out in16{want16 ? ws.in16 : nullptr, split};
  // The fp32 matmul inputs (normed rows, SwiGLU's output), where a matmul reads them: the bf16 GEMMs read
  // only in16, so there they are not written.
  float* const xn = want16 ? nullptr : ws.xn;
  float* const act = want16 ? nullptr : ws.act;
  // The remainder half of a split GEMM's output y of row length n (or null).
  auto rem = [&](const float* y, int n) -> const float* { return split ? y + size_t(T) * size_t(n) : nullptr; };
  auto matmul = [&](const DeviceMatrix& m, const float* x, float* y) {
    if (use_gemm)
      ctx.gemm->run(m, want16 ? static_cast<const void*>(ws.in16) : static_cast<const void*>(x), split ? 2 * T : T,
           y);
    else
      launch_matvec(m.ptr, m.type, m.rows, m.cols, x, T, y, stream);
  };

  // Flash attention (one query head per warp, 16 query rows of a tile) pays off for query tiles of many rows
  // (prompt chunks) on the GEMM path. Every other window from a bf16 arena takes the decode kernel, whose mma
  // tiles hold a GQA group's heads, so each K/V tile is read once for the group; from an fp32 arena (or with
  // attention_tc off) the fixed-order kernel. Both give a row the same bits in any window (fixed split
  // boundaries, each query vector's arithmetic its own), so the windows below gemm_min_rows stay exact among
  // themselves with either; flash attention is never one of theirs.
  const bool flash = use_gemm && flash_attention_supports(HD) && takes_flash(shape);
  const bool tc = !flash && ctx.attention_tc && attention_tc_supports(HD, ctx.kv.type);
  // A mixed window's long tiles (its prompt chunks, build_window_meta's flash_long_tiles) on flash attention,
  // after the tensor-core kernel and its split merge have served the short ones (decode rows). The merge runs
  // over every row of the window, so flash must come after it: it overwrites the rows of its own tiles.
  const bool flash_long = tc && shape.flash_tiles_cap > 0;
  if (shape.flash_tiles_cap > 0 && !(flash_long && flash_attention_supports(HD)))
    throw Error("cuda forward: a window with flash tiles needs the tensor-core attention and flash attention");

  // STRATA_GEMV_RESIDUAL_EARLY=0: the o and down projections read their residual values after pdl_wait() (a
  // measurement switch; the same values either way).
  static const bool residual_early = env_int("STRATA_GEMV_RESIDUAL_EARLY", 0, 1, 1) != 0;
  // STRATA_GEMV_ROPE_EARLY=0: the QKV projection's RoPE epilogue looks its table entries and KV cells up after
  // pdl_wait() (a measurement switch; the same bits).
  static const bool rope_early = env_int("STRATA_GEMV_ROPE_EARLY", 0, 1, 1) != 0;
  // y (op) W x on the fused GEMV, norm(x) first when norm is set.
  auto fused = [&](const DeviceMatrix& m, int n, const float* x, const float* norm, GemvEpilogue ep,
                   const float* bias, float* y, int rows = -1, const int* x_rows = nullptr,
                   const QkvRopeParams* rope = nullptr, int* pick_parts = nullptr) {
    GemvParams g;
    if (rope) g.rope = *rope;
    g.w = m.ptr;
    g.n = n;
    g.k = m.cols;
    g.x = x;
    g.rows = rows < 0 ? T : rows;
    g.x_rows = x_rows;
    g.norm = norm;
    g.eps = eps;
    g.ep = ep;
    g.bias = bias;
    g.y = y;
    g.y_settled = ep == GemvEpilogue::Residual && residual_early;  // o and down: y is two kernels back or more
    g.rope_early = rope_early;
    if (pick_parts && ws.pick_value) {
      g.pick_value = ws.pick_value;
      g.pick_index = ws.pick_index;
      *pick_parts = gemv_blocks(g);
    }
    launch_gemv(g, stream);
  };

  MatvecFold normed;  // a matmul whose input is the residual launch's xn_out
  normed.ss_in = ws.ss;
  normed.eps = eps;
  auto residual = [&](const float* bias, const float* next_norm) {
    MatvecFold f;
    f.bias = bias;
    f.ss_out = ws.ss;
    f.next_norm = next_norm;
    f.xn_out = next_norm ? ws.xn : nullptr;
    return f;
  };

  // On the skinny kernel's folded windows the embedding gives the first norm's folded input (xn and the sums
  // of squares), and the last residual add the final norm's, which the LM head reads for its output rows: two
  // launches less a window (skinny_edge_fold).
  // A feature-reading model's first layer reads fc [embedding; feature]. On folded windows (once its fc is
  // split, prepare_feature_fold) that is one matmul, x = fc_embed[token] + fc_feature feature, whose residual
  // epilogue folds the first norm, and the folded LM head writes its output rows' features to ws.fin (a
  // chained step's next input): a step is then as many launches as a token model's. Elsewhere fc runs on
  // [embedding; feature] rows and the features are normed into ws.fin before the head.
  const bool feature_model = w.fc.ptr != nullptr;
  const bool edge_fold = (!feature_model || w.fc_embed) && fold && ctx.skinny_edge_fold &&
                         w.embed.type == WType::BF16 && H % 16 == 0;
  if (feature_model && edge_fold) {
    MatvecFold in = residual(nullptr, w.layers[0].attn_norm);
    in.res_table = w.fc_embed;
    in.res_tokens = tokens;
    in.res_feed = ctx.feed;
    launch_matvec(w.fc_feature.ptr, w.fc_feature.type, H, H, ctx.features_in, T, ws.x, stream, in);
  } else if (feature_model) {
    launch_feature_input(w.embed.ptr, w.embed.type, H, tokens, T, ctx.features_in, ws.xcat, stream, ctx.feed);
    launch_matvec(w.fc.ptr, w.fc.type, H, 2 * H, ws.xcat, T, ws.x, stream);
  } else if (edge_fold)
    launch_embedding(w.embed.ptr, w.embed.type, H, tokens, T, ws.x, stream, w.layers[0].attn_norm, ws.xn, ws.ss,
                     ctx.feed);
  else
    launch_embedding(w.embed.ptr, w.embed.type, H, tokens, T, ws.x, stream, nullptr, nullptr, nullptr, ctx.feed);
  if (!gemv && !edge_fold)
    launch_add_rmsnorm(ws.x, nullptr, nullptr, nullptr, w.layers[0].attn_norm, nullptr, T, H, eps, false, xn, in16,
                       stream);
  // The skinny kernel's QKV projection carries the RoPE step on folded windows (the same bits as the two
  // launches).
  const bool skinny_rope = fold && ctx.skinny_rope && matvec_qkv_rope_supports(w.type, q_dim + 2 * kv_dim, HD);

  QkvRopeParams qp;
  qp.n_heads = c.num_heads;
  qp.n_kv_heads = c.num_kv_heads;
  qp.head_dim = HD;
  qp.eps = eps;
  qp.cos = ctx.rope_cos;
  qp.sin = ctx.rope_sin;
  qp.pos = pos;
  qp.slot = slot;

  AttentionParams ap;
  ap.qkv = ws.qkv;
  ap.qkv_stride = q_dim + 2 * kv_dim;
  ap.n_heads = c.num_heads;
  ap.n_kv_heads = c.num_kv_heads;
  ap.head_dim = HD;
  ap.scale = 1.0f / std::sqrt(float(HD));  // the CPU backend's scale, to the bit
  ap.pos = pos;
  ap.slot = slot;
  ap.tile_first = ws.meta + L.tile_first;
  ap.tile_rows = ws.meta + L.tile_rows;
  ap.n_tiles = ws.meta + L.n_tiles;
  ap.max_tiles = shape.tiles_cap;
  ap.max_splits = ws.max_splits;
  ap.tc_lean = ctx.attention_tc_lean;
  ap.grid_splits = shape.splits_cap;
  ap.rows = T;
  ap.part_acc = ws.part_acc;
  ap.part_ml = ws.part_ml;
  ap.out = ws.att;
  ap.out16 = in16;
  AttentionParams flash_ap = ap;  // the long tiles
  flash_ap.tile_first = ws.meta + L.flash_tile_first;
  flash_ap.tile_rows = ws.meta + L.flash_tile_rows;
  flash_ap.n_tiles = ws.meta + L.n_flash_tiles;
  flash_ap.max_tiles = shape.flash_tiles_cap;

  // STRATA_GEMV_ROPE=0 keeps the separate RoPE step on the fused GEMV's windows too (a measurement switch; same
  // bits either way).
  static const bool rope_gemv_on = env_int("STRATA_GEMV_ROPE", 0, 1, 1) != 0;
  // STRATA_GEMV_PICKS=0: the greedy picks by a pass over the logits after the fused LM head (measurement switch).
  static const bool gemv_picks_on = env_int("STRATA_GEMV_PICKS", 0, 1, 1) != 0;
  // STRATA_SKINNY_HEAD_TILES (1, 2, 4; 3 reads as 2): the folded skinny LM head's 16-output tiles a block (same
  // bits; a measurement switch).
  static const int skinny_head_tiles = [] {
    const int v = env_int("STRATA_SKINNY_HEAD_TILES", 1, 4, 4);
    return v == 3 ? 2 : v;
  }();
  for (size_t l = 0; l < w.layers.size(); ++l) {
    const DeviceLayer& Ly = w.layers[l];
    KvLayout kv = ctx.kv;
    kv.layer_offset = l * ctx.kv_layer_stride;

    qp.qkv_rem = rem(ws.qkv, ap.qkv_stride);
    qp.bias = Ly.bqkv;
    qp.q_norm = Ly.q_norm;
    qp.k_norm = Ly.k_norm;
    qp.kv = kv;
    ap.kv = kv;
    // The fused GEMV's QKV projection does the RoPE step in its epilogue (same bits) where the model has no
    // q/k norms: one kernel boundary a layer less (docs/PERFORMANCE.md run 88).
    const bool rope_in_gemv = gemv && !row_attention && !Ly.q_norm && !Ly.k_norm && rope_gemv_on;
    if (rope_in_gemv)
      fused(Ly.wqkv, Ly.wqkv.rows / 2, ws.x, Ly.attn_norm, GemvEpilogue::Rope, nullptr, ws.qkv, -1, nullptr, &qp);
    else if (gemv)
      fused(Ly.wqkv, Ly.wqkv.rows, ws.x, Ly.attn_norm, GemvEpilogue::Store, nullptr, ws.qkv);
    else if (skinny_rope)
      launch_matvec_qkv_rope(Ly.wqkv.ptr, Ly.wqkv.type, Ly.wqkv.rows, H, ws.xn, T, ws.qkv, qp, stream,
                             l > 0 || edge_fold ? normed : MatvecFold{});
    else if (fold && (l > 0 || edge_fold))
      launch_matvec(Ly.wqkv.ptr, Ly.wqkv.type, Ly.wqkv.rows, H, ws.xn, T, ws.qkv, stream, normed);
    else
      matmul(Ly.wqkv, ws.xn, ws.qkv);
    if (row_attention) {
      launch_attention_row(ws.qkv, qp, ap, ws.attn_counters, stream);
    } else {
      if (!rope_in_gemv && !skinny_rope) launch_qkv_rope(ws.qkv, T, qp, stream);
      if (flash)  // prompt windows (tolerance path): tensor cores
        launch_flash_attention(ap, stream);
      else if (tc) {
        launch_attention_tc(ap, stream);
        if (flash_long) {
          flash_ap.kv = kv;
          launch_flash_attention(flash_ap, stream);
        }
      } else
        launch_attention(ap, stream);
    }
    if (gemv) {
      fused(Ly.wo, H, ws.att, nullptr, GemvEpilogue::Residual, Ly.bo, ws.x);
      fused(Ly.wgu, FF, ws.x, Ly.mlp_norm, GemvEpilogue::Swiglu, nullptr, ws.act);
      fused(Ly.wdown, H, ws.act, nullptr, GemvEpilogue::Residual, nullptr, ws.x);
      continue;
    }
    if (fold) {
      launch_matvec(Ly.wo.ptr, Ly.wo.type, H, Ly.wo.cols, ws.att, T, ws.x, stream, residual(Ly.bo, Ly.mlp_norm));
      launch_matvec_swiglu(Ly.wgu.ptr, Ly.wgu.type, FF, H, ws.xn, T, ws.act, stream, normed);
      const float* next = l + 1 < w.layers.size() ? w.layers[l + 1].attn_norm
                          : edge_fold && R > 0  ? w.final_norm
                                                : nullptr;
      launch_matvec(Ly.wdown.ptr, Ly.wdown.type, H, FF, ws.act, T, ws.x, stream, residual(nullptr, next));
      continue;
    }
    matmul(Ly.wo, ws.att, ws.tmp);
    launch_add_rmsnorm(ws.x, ws.tmp, rem(ws.tmp, H), Ly.bo, Ly.mlp_norm, nullptr, T, H, eps, true, xn, in16, stream);
    if (use_gemm) {
      matmul(Ly.wgu, ws.xn, ws.gu);
      launch_swiglu(ws.gu, rem(ws.gu, 2 * FF), T, FF, act, in16, stream);
    } else {
      launch_matvec_swiglu(Ly.wgu.ptr, Ly.wgu.type, FF, Ly.wgu.cols, ws.xn, T, ws.act, stream);
    }
    matmul(Ly.wdown, ws.act, ws.tmp);
    if (l + 1 < w.layers.size())
      launch_add_rmsnorm(ws.x, ws.tmp, rem(ws.tmp, H), nullptr, w.layers[l + 1].attn_norm, nullptr, T, H, eps, true,
                         xn, in16, stream);
  }
  // Every row's feature: the final norm of the residual stream (the unfolded path's last down projection is
  // still in tmp; the folded and fused paths have added theirs).
  if (shape.features) {
    const bool pending = !fold && !gemv;
    launch_add_rmsnorm(ws.x, pending ? ws.tmp : nullptr, pending ? rem(ws.tmp, H) : nullptr, nullptr, w.final_norm,
                       nullptr, T, H, eps, false, ws.feat, Bf16Out{}, stream);
  }
  if (R == 0) return;
  // The picks (and the device's logprobs of them) from the R rows of logits.
  int pick_parts = 0;  // the fused LM head's candidates a row, when it made them
  auto answer_rows = [&]() {
    if (pick_parts > 0)
      launch_argmax_parts(ws.pick_value, ws.pick_index, pick_parts, R, ws.picks, stream);
    else
      launch_argmax(ws.logits, R, c.vocab_size, ws.picks, stream);
    if (!draws) return;
    launch_sample(ws.logits, R, c.vocab_size, ws.meta + L.pick_specs, ws.picks, stream);
    if (ctx.device_logprobs)
      launch_logprobs(ws.logits, R, c.vocab_size, ws.meta + L.pick_specs, ws.picks, ws.logprobs, stream);
  };
  if (gemv) {  // the output rows, normed on the way in
    // The picks from the LM head's per-block candidates (same answer as argmax over the logits, without a pass
    // of one block over them).
    if (feature_model) {  // normed into ws.fin first, the next chained step's features
      launch_add_rmsnorm(ws.x, nullptr, nullptr, nullptr, w.final_norm, out_rows, R, H, eps, false, ws.fin, Bf16Out{},
                         stream);
      fused(w.output, w.output.rows, ws.fin, nullptr, GemvEpilogue::Store, nullptr, ws.logits, R, nullptr, nullptr,
            gemv_picks_on ? &pick_parts : nullptr);
    } else {
      fused(w.output, w.output.rows, ws.x, w.final_norm, GemvEpilogue::Store, nullptr, ws.logits, R, out_rows, nullptr,
            gemv_picks_on ? &pick_parts : nullptr);
    }
    answer_rows();
    return;
  }
  // Only rows that need an answer pay for the vocabulary projection. Windows on the skinny path keep it there
  // (a row's logits never depend on R); a window on the GEMM path with gemm_min_rows+ output rows (a large decode
  // batch) gives it to cuBLAS too, which reads the 0.25-1 GB matrix once for all of them.
  if (edge_fold) {  // the output rows of the last residual add's folded final norm
    MatvecFold head = normed;
    head.x_rows = out_rows;
    head.out_tiles = skinny_head_tiles;
    if (feature_model) head.x_normed_out = ws.fin;
    launch_matvec(w.output.ptr, w.output.type, w.output.rows, w.output.cols, ws.xn, R, ws.logits, stream, head);
    answer_rows();
    return;
  }
  const bool gemm_head = use_gemm && R >= ctx.gemm_min_rows;
  const Bf16Out fin16{gemm_head && want16 ? ws.in16 : nullptr, gemm_head && split};
  launch_add_rmsnorm(ws.x, fold ? nullptr : ws.tmp, rem(ws.tmp, H), nullptr, w.final_norm, out_rows, R, H, eps, false,
                     ws.fin, fin16, stream);
  if (gemm_head) {
    ctx.gemm->run(w.output, fin16.p ? static_cast<const void*>(fin16.p) : static_cast<const void*>(ws.fin),
         fin16.split ? 2 * R : R, ws.logits);
    const size_t V = size_t(w.output.rows);
    if (fin16.split) launch_add(ws.logits, ws.logits + size_t(R) * V, size_t(R) * V, stream);
  } else
    launch_matvec(w.output.ptr, w.output.type, w.output.rows, w.output.cols, ws.fin, R, ws.logits, stream);
  answer_rows();
}

}  // namespace cuda
}  // namespace strata
