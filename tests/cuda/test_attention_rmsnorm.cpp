// The fp32 attention kernel (launch_attention) and the fused residual-add RMSNorm (launch_add_rmsnorm) on
// their own, against straightforward host fp32 references, and their window invariants at the kernel level:
// a row's attention bits are the same alone, in a verify tile of up to 16 rows, beside other slots' rows, under
// a grid with more splits than it needs, under a grid of one tile per row and in a large decode batch (the
// kernel's smallest K/V ring); a row's norm bits are the same alone and among 64 rows, and with 16-byte or
// scalar loads. Attention inputs are random q / K / V in a paged arena with fragmented block tables
// (layer 1 of two, so layer_offset is exercised). Also prints the decode-shape speed of both (not asserted).
#include <catch2/catch.hpp>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <vector>

#include "cuda/kernels/kernels.hpp"
#include "tests/cuda/cuda_test_buffers.hpp"
#include "engine/core/types.hpp"

using namespace strata;
using namespace strata::cuda;

namespace {

using cuda_test::bf16_rn;
using cuda_test::bf16_rem;
using cuda_test::Dev;

bool same_bits(const float* a, const float* b, size_t n) { return std::memcmp(a, b, n * sizeof(float)) == 0; }

// ---------------------------------------------------------------------------------------------------------
// Attention

struct AttnShape {
  int head_dim, n_heads, n_kv_heads;
  int slots, context;
};

struct RowAt {
  int slot, pos;
};

// A window: rows in order, cut into query tiles of consecutive positions of one slot.
struct AttnWindow {
  std::vector<RowAt> rows;
  std::vector<int> tile_first, tile_rows;
  // Appends `count` rows of `slot` from position `first`, in tiles of at most `tile` rows.
  void add(int slot, int first, int count, int tile) {
    for (int i = 0; i < count; i += tile) {
      tile_first.push_back(int(rows.size()) + i);
      tile_rows.push_back(std::min(tile, count - i));
    }
    for (int i = 0; i < count; ++i) rows.push_back({slot, first + i});
  }
};

// The arena and its block tables on host and device; q of a row is a function of (slot, pos) alone, so one
// row gets the same q in every window. bf16: the K/V values are bf16 numbers, held both in an fp32 arena and
// in a bf16 one (arena16 picks which one run() reads).
class AttnFixture {
 public:
  AttnFixture(const AttnShape& s, unsigned seed, bool bf16 = false)
      : sh(s), hd(s.head_dim), q_dim(s.n_heads * s.head_dim), kv_dim(s.n_kv_heads * s.head_dim),
        stride(q_dim + 2 * kv_dim), seed_(seed), per_slot((s.context + kBs - 1) / kBs), blocks(s.slots * per_slot),
        layer(size_t(blocks) * kBs * size_t(kv_dim)), k_(2 * layer), v_(2 * layer), k16_(bf16 ? 2 * layer : 1),
        v16_(bf16 ? 2 * layer : 1), table_(size_t(blocks)) {
    // Blocks handed out interleaved across slots and in reverse: every table is fragmented.
    std::vector<int32_t> table(static_cast<size_t>(blocks));
    for (int sl = 0; sl < s.slots; ++sl)
      for (int j = 0; j < per_slot; ++j) table[size_t(sl) * per_slot + j] = blocks - 1 - (j * s.slots + sl);
    table_h = table;
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    kh.resize(2 * layer);
    vh.resize(2 * layer);
    for (float& x : kh) x = u(rng);
    for (float& x : vh) x = u(rng);
    if (bf16) {
      std::vector<uint16_t> k16(kh.size()), v16(vh.size());
      for (size_t i = 0; i < kh.size(); ++i) {
        k16[i] = bf16_rn(kh[i]);
        v16[i] = bf16_rn(vh[i]);
        kh[i] = cuda_test::bf16_value(k16[i]);
        vh[i] = cuda_test::bf16_value(v16[i]);
      }
      k16_.put(k16);
      v16_.put(v16);
    }
    k_.put(kh);
    v_.put(vh);
    table_.put(table);
    counters_.put(std::vector<int>(64, 0));  // per query head (at most 32 here)
    configure_attention(hd);
  }

  std::vector<float> q_of(int slot, int pos) const {
    std::mt19937 rng(seed_ * 2654435761u + unsigned(slot) * 40503u + unsigned(pos) * 7919u + 1u);
    std::uniform_real_distribution<float> u(-4.0f, 4.0f);
    std::vector<float> q(static_cast<size_t>(q_dim));
    for (float& x : q) x = u(rng);
    return q;
  }

  const float* k_row(int slot, int pos) const { return &kh[cell(slot, pos) * kv_dim + layer]; }
  const float* v_row(int slot, int pos) const { return &vh[cell(slot, pos) * kv_dim + layer]; }

  // The CPU backend's arithmetic, in fp32: scores, max, exp, sum, P.V, times 1 / sum.
  std::vector<float> reference(const RowAt& r) const {
    const std::vector<float> q = q_of(r.slot, r.pos);
    const int group = sh.n_heads / sh.n_kv_heads;
    const float scale = 1.0f / std::sqrt(float(hd));
    std::vector<float> out(size_t(q_dim), 0.0f), score(size_t(r.pos) + 1);
    for (int h = 0; h < sh.n_heads; ++h) {
      const size_t ko = size_t(h / group) * hd;
      float m = -INFINITY;
      for (int t = 0; t <= r.pos; ++t) {
        const float* k = k_row(r.slot, t) + ko;
        float d = 0.0f;
        for (int i = 0; i < hd; ++i) d += q[size_t(h) * hd + i] * k[i];
        score[size_t(t)] = d * scale;
        m = std::max(m, score[size_t(t)]);
      }
      float sum = 0.0f;
      for (int t = 0; t <= r.pos; ++t) {
        score[size_t(t)] = std::exp(score[size_t(t)] - m);
        sum += score[size_t(t)];
      }
      float* o = &out[size_t(h) * hd];
      for (int t = 0; t <= r.pos; ++t) {
        const float* v = v_row(r.slot, t) + ko;
        for (int i = 0; i < hd; ++i) o[i] += score[size_t(t)] * v[i];
      }
      for (int i = 0; i < hd; ++i) o[i] *= 1.0f / sum;
    }
    return out;
  }

  struct Out {
    std::vector<float> out;       // [rows][q_dim]
    std::vector<uint16_t> out16;  // its bf16 copy; split: then the remainders' rows (Bf16Out)
    bool pad_untouched = true;    // rows past the window stay as they were
  };

  // Runs launch_attention on `w`. extra_splits: grid splits beyond what the largest position needs (a graph
  // captured for longer windows); extra_tiles: grid tiles beyond the window's; split: the bf16 copy in the split
  // GEMM's form.
  Out run(const AttnWindow& w, int extra_splits = 0, int extra_tiles = 0, bool split = false) const {
    const int rows = int(w.rows.size()), n_tiles = int(w.tile_first.size());
    const int pad_rows = 3;
    std::vector<float> qkv(size_t(rows) * stride, 0.0f);
    std::vector<int> pos, slot;
    int max_pos = 0;
    for (int i = 0; i < rows; ++i) {
      const RowAt& r = w.rows[size_t(i)];
      REQUIRE(r.pos < sh.context);
      const std::vector<float> q = q_of(r.slot, r.pos);
      std::copy(q.begin(), q.end(), qkv.begin() + size_t(i) * stride);
      // k and v of the row: garbage (the kernel reads K/V from the arena only), except for the one-row kernel,
      // which stores the row's own k and v: then the arena's values, so the arena stays as it is.
      for (int j = q_dim; j < stride; ++j) qkv[size_t(i) * stride + j] = 1e30f;
      if (row) {
        std::copy(k_row(r.slot, r.pos), k_row(r.slot, r.pos) + kv_dim, qkv.begin() + size_t(i) * stride + q_dim);
        std::copy(v_row(r.slot, r.pos), v_row(r.slot, r.pos) + kv_dim,
                  qkv.begin() + size_t(i) * stride + q_dim + kv_dim);
      }
      pos.push_back(r.pos);
      slot.push_back(r.slot);
      max_pos = std::max(max_pos, r.pos);
    }
    const int max_splits = (sh.context + kAttnSplit - 1) / kAttnSplit;
    const int grid_splits = std::min(max_splits, max_pos / kAttnSplit + 1 + extra_splits);
    Dev<float> d_qkv(qkv.size());
    d_qkv.put(qkv);
    Dev<int> d_pos{size_t(rows)}, d_slot{size_t(rows)}, d_tf{size_t(n_tiles + extra_tiles)},
        d_tr{size_t(n_tiles + extra_tiles)}, d_nt(1);
    d_pos.put(pos);
    d_slot.put(slot);
    std::vector<int> tf = w.tile_first, tr = w.tile_rows;
    tf.resize(size_t(n_tiles + extra_tiles), 0);  // tiles past n_tiles: their blocks must exit
    tr.resize(size_t(n_tiles + extra_tiles), kAttnQueryTile);
    d_tf.put(tf);
    d_tr.put(tr);
    d_nt.put({n_tiles});
    Dev<float> part_acc(size_t(rows) * sh.n_heads * max_splits * hd),
        part_ml(size_t(rows) * sh.n_heads * max_splits * 2);
    const size_t out_n = size_t(rows + pad_rows) * q_dim, out16_n = out_n + (split ? size_t(rows) * q_dim : 0);
    Dev<float> out(out_n);
    Dev<uint16_t> out16(out16_n);
    out.put(std::vector<float>(out_n, NAN));
    out16.put(std::vector<uint16_t>(out16_n, 0x7fc1));

    AttentionParams ap;
    ap.qkv = d_qkv.p;
    ap.qkv_stride = stride;
    ap.kv.k = arena16 ? static_cast<void*>(k16_.p) : static_cast<void*>(k_.p);
    ap.kv.v = arena16 ? static_cast<void*>(v16_.p) : static_cast<void*>(v_.p);
    ap.kv.type = arena16 ? KvType::BF16 : KvType::F32;
    ap.kv.block_table = table_.p;
    ap.kv.table_stride = per_slot;
    ap.kv.block_size = kBs;
    ap.kv.layer_offset = layer;
    ap.kv.kv_dim = kv_dim;
    ap.n_heads = sh.n_heads;
    ap.n_kv_heads = sh.n_kv_heads;
    ap.head_dim = hd;
    ap.scale = 1.0f / std::sqrt(float(hd));
    ap.pos = d_pos.p;
    ap.slot = d_slot.p;
    ap.tile_first = d_tf.p;
    ap.tile_rows = d_tr.p;
    ap.n_tiles = d_nt.p;
    ap.max_tiles = n_tiles + extra_tiles;
    ap.max_splits = max_splits;
    ap.grid_splits = grid_splits;
    ap.rows = rows;
    ap.tc_lean = tc_lean;
    ap.part_acc = part_acc.p;
    ap.part_ml = part_ml.p;
    ap.out = out.p;
    ap.out16 = Bf16Out{out16.p, split};
    if (row) {
      // RoPE by cos 1, sin 0 (rotate-half leaves both halves exactly as they are), no bias or norms: the
      // row kernel's q is q_of and its stored k / v are the arena's, as the reference reads them.
      REQUIRE(rows == 1);
      const size_t table_n = size_t(sh.context) * size_t(hd / 2);
      Dev<float> cs(table_n), sn(table_n);
      cs.put(std::vector<float>(table_n, 1.0f));
      sn.put(std::vector<float>(table_n, 0.0f));
      QkvRopeParams qp;
      qp.n_heads = sh.n_heads;
      qp.n_kv_heads = sh.n_kv_heads;
      qp.head_dim = hd;
      qp.cos = cs.p;
      qp.sin = sn.p;
      qp.pos = d_pos.p;
      qp.slot = d_slot.p;
      qp.kv = ap.kv;
      launch_attention_row(d_qkv.p, qp, ap, counters_.p, nullptr);
      CU(cudaDeviceSynchronize());
      // The counters are back at zero: the next launch merges again.
      for (int c : counters_.get()) REQUIRE(c == 0);
    } else if (tc) {
      launch_attention_tc(ap, nullptr);
    } else {
      launch_attention(ap, nullptr);
    }
    CU(cudaDeviceSynchronize());
    CU(cudaGetLastError());

    Out res;
    const std::vector<float> o = out.get();
    const std::vector<uint16_t> o16 = out16.get();
    const size_t n = size_t(rows) * q_dim;
    res.out.assign(o.begin(), o.begin() + std::ptrdiff_t(n));
    const size_t n16 = split ? 2 * n : n;
    res.out16.assign(o16.begin(), o16.begin() + std::ptrdiff_t(n16));
    for (size_t i = n; i < out_n; ++i)
      if (!std::isnan(o[i])) res.pad_untouched = false;
    for (size_t i = n16; i < out16_n; ++i)
      if (o16[i] != 0x7fc1) res.pad_untouched = false;
    return res;
  }

  AttnShape sh;
  int hd, q_dim, kv_dim, stride;
  bool arena16 = false;  // run() reads the bf16 arena (a fixture made with bf16 only)
  bool tc = false;       // run() takes launch_attention_tc (needs arena16)
  bool tc_lean = false;  // ... its lean variant
  bool row = false;      // run() takes launch_attention_row (one-row windows)

 private:
  static constexpr int kBs = 16;
  size_t cell(int slot, int pos) const {
    return size_t(table_h[size_t(slot) * per_slot + pos / kBs]) * kBs + size_t(pos % kBs);
  }
  unsigned seed_;
  int per_slot, blocks;
  size_t layer;
  Dev<float> k_, v_;
  Dev<uint16_t> k16_, v16_;
  Dev<int32_t> table_;
  Dev<int> counters_{64};  // launch_attention_row's, zero between launches
  std::vector<int32_t> table_h;
  std::vector<float> kh, vh;
};

// Every row of `w` within 1e-4 of the reference (relative to the row's largest value, at least 1); the bf16
// copy is the fp32 output rounded, and its split form that plus the remainders; rows past the window untouched.
void check_reference(const AttnFixture& f, const AttnWindow& w, int extra_splits = 0) {
  const AttnFixture::Out got = f.run(w, extra_splits, 2);
  CHECK(got.pad_untouched);
  const AttnFixture::Out split = f.run(w, extra_splits, 2, true);
  CHECK(split.pad_untouched);
  CHECK(same_bits(split.out.data(), got.out.data(), got.out.size()));
  size_t bad16 = 0;
  const size_t n = got.out.size();
  for (size_t i = 0; i < n; ++i) {
    if (got.out16[i] != bf16_rn(got.out[i])) ++bad16;
    if (split.out16[i] != bf16_rn(got.out[i]) || split.out16[n + i] != bf16_rem(got.out[i])) ++bad16;
  }
  CHECK(bad16 == 0);
  for (size_t i = 0; i < w.rows.size(); ++i) {
    const RowAt& r = w.rows[i];
    const std::vector<float> ref = f.reference(r);
    float scale = 1.0f, err = 0.0f;
    for (float x : ref) scale = std::max(scale, std::fabs(x));
    for (size_t j = 0; j < ref.size(); ++j) {
      const float d = std::fabs(got.out[i * size_t(f.q_dim) + j] - ref[j]);
      err = std::isnan(d) ? INFINITY : std::max(err, d);
    }
    INFO("hd " << f.hd << ", heads " << f.sh.n_heads << "/" << f.sh.n_kv_heads << ", row " << i << " (slot " << r.slot
               << ", pos " << r.pos << "): max |gpu - ref| " << err << " at scale " << scale);
    CHECK(err <= 1e-4f * scale);
  }
}

}  // namespace

TEST_CASE("attention matches a host fp32 reference: decode rows and verify tiles, GQA 4:1 and 1:1") {
  int devices = 0;
  REQUIRE(cudaGetDeviceCount(&devices) == cudaSuccess);
  REQUIRE(devices > 0);
  // Decode rows of several slots, each its own 1-row tile: positions on both sides of split boundaries.
  AttnWindow decode;
  const int dpos[] = {0, 1, 31, 127, 128, 129, 260, 700, 1023};
  for (int i = 0; i < 9; ++i) decode.add(i % 6, dpos[i], 1, 1);
  // Verify tiles of 16 rows (one crossing position 256, one crossing 128), a 7-row tile, single rows.
  AttnWindow verify;
  verify.add(0, 250, 16, 16);
  verify.add(1, 120, 16, 16);
  verify.add(2, 0, 7, 16);
  verify.add(3, 511, 1, 1);
  verify.add(4, 600, 40, 16);  // 16 + 16 + 8
  for (const AttnShape sh : {AttnShape{64, 32, 8, 6, 1024}, AttnShape{128, 32, 8, 6, 1024},
                             AttnShape{64, 8, 8, 6, 1024}, AttnShape{128, 8, 8, 6, 1024},
                             AttnShape{128, 16, 4, 6, 1024}}) {
    AttnFixture f(sh, 1u + unsigned(sh.head_dim + sh.n_kv_heads));
    check_reference(f, decode);
    check_reference(f, verify);
  }
}

TEST_CASE("attention matches a host fp32 reference on unusual shapes") {
  int devices = 0;
  REQUIRE(cudaGetDeviceCount(&devices) == cudaSuccess);
  REQUIRE(devices > 0);
  AttnWindow w;
  w.add(0, 0, 1, 1);
  w.add(1, 300, 1, 1);
  w.add(2, 125, 3, 3);   // 3-row tile: heads per block not a divisor of every group
  w.add(3, 60, 16, 16);
  w.add(1, 2000, 5, 16);  // 16 splits
  for (const AttnShape sh : {AttnShape{16, 12, 2, 4, 2048},   // group 6, tiny head
                             AttnShape{36, 14, 2, 4, 2048},   // group 7, head_dim / 4 odd
                             AttnShape{18, 4, 2, 4, 2048},    // head_dim not a multiple of 4: scalar copies
                             AttnShape{256, 8, 2, 4, 2048},   // largest head: two P.V passes for 16-vector chunks
                             AttnShape{32, 32, 1, 4, 2048},   // group 32: two blocks per decode row
                             AttnShape{48, 6, 6, 4, 2048}}) {
    AttnFixture f(sh, 100u + unsigned(sh.head_dim));
    check_reference(f, w);
    check_reference(f, w, 5);  // a grid with more splits than the window needs
  }
}

TEST_CASE("attention: a row's bits alone, in a 16-row verify tile and beside other slots are the same") {
  int devices = 0;
  REQUIRE(cudaGetDeviceCount(&devices) == cudaSuccess);
  REQUIRE(devices > 0);
  // The fixed-order kernel, and the tensor-core kernel (plain and lean) on a bf16 arena, which serves verify
  // windows from a bf16 arena: each must give a row its bits alone in every tile and crowd below.
  const int kernel = GENERATE(0, 1, 2);
  for (const AttnShape sh : {AttnShape{64, 32, 8, 4, 1024}, AttnShape{128, 16, 4, 4, 1024},
                             AttnShape{64, 8, 8, 4, 1024}, AttnShape{36, 14, 2, 4, 1024},
                             AttnShape{64, 8, 4, 4, 1024}, AttnShape{64, 6, 2, 4, 1024}}) {
    if (kernel > 0 && !attention_tc_supports(sh.head_dim, KvType::BF16)) continue;
    AttnFixture f(sh, 7u + unsigned(sh.head_dim), kernel > 0);
    f.arena16 = kernel > 0;
    f.tc = kernel > 0;
    f.tc_lean = kernel == 2;
    INFO((kernel == 0 ? "fixed-order" : kernel == 1 ? "tensor-core" : "tensor-core lean") << " kernel");
    const int P = 250, slot = 1;
    const size_t qd = size_t(f.q_dim);
    // Each row of positions P - 15 .. P + 15 alone in its window.
    std::vector<std::vector<float>> alone;
    for (int p = P - 15; p <= P + 15; ++p) {
      AttnWindow w;
      w.add(slot, p, 1, 1);
      alone.push_back(f.run(w).out);
    }
    auto alone_of = [&](int p) -> const std::vector<float>& { return alone[size_t(p - (P - 15))]; };
    // Tiles of T rows starting at several offsets, alone and after other slots' rows, with a larger grid.
    for (int T : {2, 5, 16}) {
      for (int first : {P - 15, P - 7, P, P + 15 - T + 1}) {
        AttnWindow w;
        w.add(slot, first, T, 16);
        AttnWindow crowd;
        crowd.add(0, 900, 1, 1);
        crowd.add(2, 40, 16, 16);
        const size_t at = crowd.rows.size();
        crowd.add(slot, first, T, 16);
        crowd.add(3, 1000, 3, 16);
        // got3: a grid of one tile per row (as a decode window's), so the blocks of a kv head do all its chunks
        // of the multi-row tiles in turn
        const int crowd_rows = int(crowd.rows.size()), crowd_tiles = int(crowd.tile_first.size());
        const std::vector<float> got = f.run(w).out, got2 = f.run(crowd, 3).out,
                                 got3 = f.run(crowd, 0, crowd_rows - crowd_tiles).out;
        for (int t = 0; t < T; ++t) {
          INFO("hd " << f.hd << ", heads " << sh.n_heads << "/" << sh.n_kv_heads << ", tile of " << T << " from "
                     << first << ", row " << t);
          CHECK(same_bits(&got[size_t(t) * qd], alone_of(first + t).data(), qd));
          CHECK(same_bits(&got2[(at + size_t(t)) * qd], alone_of(first + t).data(), qd));
          CHECK(same_bits(&got3[(at + size_t(t)) * qd], alone_of(first + t).data(), qd));
        }
      }
    }
  }
}

TEST_CASE("attention: rows of a large decode batch match the reference and their bits alone") {
  int devices = 0;
  REQUIRE(cudaGetDeviceCount(&devices) == cudaSuccess);
  REQUIRE(devices > 0);
  // 160 single-row tiles (several rows per slot, at unrelated positions) and a 16-row and a 5-row tile: a grid
  // of thousands of blocks, so the kernel streams K/V through its smallest ring of tile buffers, while each
  // row alone gets the largest; a split's last tile is partial for most rows.
  AttnWindow big;
  for (int i = 0; i < 160; ++i) big.add(i % 6, (i * 397 + 11) % 1000, 1, 1);
  const size_t v16 = big.rows.size();
  big.add(2, 300, 16, 16);
  big.add(4, 61, 5, 16);
  for (const AttnShape sh : {AttnShape{128, 32, 8, 6, 1024}, AttnShape{64, 32, 8, 6, 1024},
                             AttnShape{256, 8, 2, 6, 1024}, AttnShape{36, 14, 2, 6, 1024},
                             AttnShape{18, 4, 2, 6, 1024}, AttnShape{32, 32, 1, 6, 1024}}) {
    AttnFixture f(sh, 300u + unsigned(sh.head_dim + sh.n_heads));
    check_reference(f, big);
    const size_t qd = size_t(f.q_dim);
    const std::vector<float> all = f.run(big).out,
                             as_decode = f.run(big, 0, int(big.rows.size() - big.tile_first.size())).out;
    for (size_t i : {size_t(0), size_t(1), size_t(77), size_t(159), v16, v16 + 15, v16 + 16, v16 + 20}) {
      AttnWindow w;
      w.add(big.rows[i].slot, big.rows[i].pos, 1, 1);
      const std::vector<float> alone = f.run(w).out;
      INFO("hd " << f.hd << ", heads " << sh.n_heads << "/" << sh.n_kv_heads << ", row " << i << " (slot "
                 << big.rows[i].slot << ", pos " << big.rows[i].pos << ")");
      CHECK(same_bits(&all[i * qd], alone.data(), qd));
      CHECK(same_bits(&as_decode[i * qd], alone.data(), qd));
    }
  }
}

TEST_CASE("attention on a bf16 KV arena gives the bits of the fp32 arena holding the same values") {
  int devices = 0;
  REQUIRE(cudaGetDeviceCount(&devices) == cudaSuccess);
  REQUIRE(devices > 0);
  // The bf16 arena is widened exactly on the way into shared memory, so every kernel computes on the same
  // fp32 numbers as from an fp32 arena holding the bf16 values: decode rows and verify tiles (the staged
  // kernel), and a large decode batch (the ring-pipelined kernel at head_dim 128+).
  AttnWindow few;
  const int dpos[] = {0, 1, 127, 128, 260, 700, 1023};
  for (int i = 0; i < 7; ++i) few.add(i % 6, dpos[i], 1, 1);
  few.add(1, 250, 16, 16);
  few.add(2, 0, 7, 16);
  AttnWindow big;
  for (int i = 0; i < 160; ++i) big.add(i % 6, (i * 397 + 11) % 1000, 1, 1);
  big.add(2, 300, 16, 16);
  for (const AttnShape sh : {AttnShape{128, 32, 8, 6, 1024}, AttnShape{64, 32, 8, 6, 1024},
                             AttnShape{256, 8, 2, 6, 1024}, AttnShape{16, 12, 2, 6, 1024}}) {
    AttnFixture f(sh, 900u + unsigned(sh.head_dim), true);
    for (const AttnWindow* w : {&few, &big}) {
      INFO("hd " << sh.head_dim << ", heads " << sh.n_heads << "/" << sh.n_kv_heads << ", rows " << w->rows.size());
      f.arena16 = false;
      const AttnFixture::Out a = f.run(*w);
      f.arena16 = true;
      const AttnFixture::Out b = f.run(*w);
      CHECK(b.pad_untouched);
      CHECK(same_bits(a.out.data(), b.out.data(), a.out.size()));
      check_reference(f, *w);  // and the values are right (against the host reference on the bf16 values)
    }
  }
}

TEST_CASE("the one-row attention kernel matches the host reference on both arenas, across split boundaries") {
  int devices = 0;
  REQUIRE(cudaGetDeviceCount(&devices) == cudaSuccess);
  REQUIRE(devices > 0);
  CHECK(attention_row_supports(32, 1, 128));  // a block per query head: any group size
  CHECK_FALSE(attention_row_supports(32, 5, 128));
  CHECK_FALSE(attention_row_supports(8, 8, 12));
  CHECK(attention_row_supports(32, 8, 128));
  // Groups of 4, 1, 2 and 4 query heads, then 6 (a 48-wide head: 6 threads a V row, so 21 position groups
  // and two idle threads) and 16.
  for (const AttnShape sh : {AttnShape{128, 32, 8, 4, 1100}, AttnShape{64, 8, 8, 4, 1100}, AttnShape{16, 4, 2, 4, 1100},
                             AttnShape{256, 4, 1, 4, 600}, AttnShape{48, 12, 2, 4, 1100},
                             AttnShape{64, 32, 2, 4, 600}}) {
    for (bool bf16 : {false, true}) {
      AttnFixture f(sh, 1500u + unsigned(sh.head_dim + sh.n_heads), bf16);
      f.arena16 = bf16;
      f.row = true;
      for (int pos : {0, 5, 127, 128, 300, 599, sh.context - 1}) {
        AttnWindow w;
        w.add(pos % sh.slots, pos, 1, 1);
        INFO("hd " << sh.head_dim << ", heads " << sh.n_heads << "/" << sh.n_kv_heads << ", pos " << pos
                   << (bf16 ? ", bf16" : ", f32") << " arena");
        for (int extra : {0, 3}) {  // a grid with more splits than the position needs
          const AttnFixture::Out a = f.run(w, extra), again = f.run(w, extra);
          CHECK(same_bits(a.out.data(), again.out.data(), a.out.size()));
          CHECK(a.pad_untouched);
          const std::vector<float> ref = f.reference(w.rows[0]);
          float scale = 1.0f, err = 0.0f;
          for (float x : ref) scale = std::max(scale, std::fabs(x));
          for (size_t j = 0; j < ref.size(); ++j) {
            const float d = std::fabs(a.out[j] - ref[j]);
            err = std::isnan(d) ? INFINITY : std::max(err, d);
          }
          INFO("max |gpu - ref| " << err << " at scale " << scale);
          CHECK(err <= 1e-4f * scale);
        }
      }
    }
  }
}

TEST_CASE("tensor-core attention on a bf16 arena matches the host reference: decode batches, verify tiles, GQA") {
  int devices = 0;
  REQUIRE(cudaGetDeviceCount(&devices) == cudaSuccess);
  REQUIRE(devices > 0);
  // q and P split into bf16 hi + remainder, K and V exact: within 1e-4 of the fp32 reference like the fp32
  // kernels. Single-row tiles on both sides of split boundaries, partial last splits, 16-row and 5-row tiles
  // (several mma chunks of query vectors), a large batch, and grids with more splits and tiles than needed.
  AttnWindow few;
  const int dpos[] = {0, 1, 31, 127, 128, 129, 260, 700, 1023};
  for (int i = 0; i < 9; ++i) few.add(i % 6, dpos[i], 1, 1);
  few.add(1, 250, 16, 16);
  few.add(2, 0, 7, 16);
  few.add(4, 600, 40, 16);
  AttnWindow big;
  for (int i = 0; i < 160; ++i) big.add(i % 6, (i * 397 + 11) % 1000, 1, 1);
  big.add(2, 300, 16, 16);
  big.add(4, 61, 5, 16);
  CHECK_FALSE(attention_tc_supports(128, KvType::F32));
  CHECK_FALSE(attention_tc_supports(96, KvType::BF16));
  for (const AttnShape sh : {AttnShape{128, 32, 8, 6, 1024}, AttnShape{64, 32, 8, 6, 1024},
                             AttnShape{128, 8, 8, 6, 1024}, AttnShape{64, 8, 2, 6, 1024},
                             AttnShape{128, 16, 4, 6, 1024}, AttnShape{64, 32, 1, 6, 1024}}) {
    for (bool lean : {false, true}) {
      AttnFixture f(sh, 1200u + unsigned(sh.head_dim + sh.n_heads), true);
      f.arena16 = true;
      f.tc = true;
      f.tc_lean = lean;
      INFO("hd " << sh.head_dim << ", heads " << sh.n_heads << "/" << sh.n_kv_heads << (lean ? ", lean" : ""));
      check_reference(f, few);
      check_reference(f, few, 5);
      check_reference(f, big);
    }
  }
}

// ---------------------------------------------------------------------------------------------------------
// RMSNorm

namespace {

struct NormCase {
  int n, rows;
  bool delta, bias, write_back, y16, row_map;
  bool split = false;  // delta_rem added, and the bf16 output split into hi and remainder rows (Bf16Out)
  int offset = 0;  // floats by which every buffer is shifted (1: no 16-byte loads)
  bool no_y = false;  // only the bf16 form asked for (y null)
};

struct NormOut {
  std::vector<float> x, y;
  std::vector<uint16_t> y16;
};

struct NormInputs {
  std::vector<float> x, delta, delta_rem, bias, weight;
  std::vector<int> map;
};

NormInputs norm_inputs(int n, int rows, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  NormInputs in;
  in.x.resize(size_t(rows) * n);
  in.delta.resize(size_t(rows) * n);
  in.delta_rem.resize(size_t(rows) * n);
  in.bias.resize(size_t(n));
  in.weight.resize(size_t(n));
  for (float& v : in.x) v = nd(rng) * 3.0f;
  for (float& v : in.delta) v = nd(rng);
  for (float& v : in.delta_rem) v = nd(rng) * 1e-3f;
  for (float& v : in.bias) v = nd(rng) * 0.1f;
  for (float& v : in.weight) v = 1.0f + nd(rng) * 0.2f;
  for (int i = 0; i < rows; ++i) in.map.push_back((i * 37 + 11) % rows);
  return in;
}

NormOut run_norm(const NormCase& c, const NormInputs& in, float eps) {
  const size_t off = size_t(c.offset), xn = size_t(c.rows) * c.n;
  Dev<float> x(xn + off), delta(xn + off), drem(xn + off), bias(size_t(c.n) + off), weight(size_t(c.n) + off),
      y(xn + off);
  Dev<uint16_t> y16(2 * xn + off);
  Dev<int> map{size_t(c.rows)};
  x.put(in.x, off);
  delta.put(in.delta, off);
  drem.put(in.delta_rem, off);
  bias.put(in.bias, off);
  weight.put(in.weight, off);
  map.put(in.map);
  y.put(std::vector<float>(xn + off, NAN));
  launch_add_rmsnorm(x.p + off, c.delta ? delta.p + off : nullptr, c.split ? drem.p + off : nullptr,
                     c.bias ? bias.p + off : nullptr, weight.p + off, c.row_map ? map.p : nullptr, c.rows, c.n, eps,
                     c.write_back, c.no_y ? nullptr : y.p + off, Bf16Out{c.y16 ? static_cast<void*>(y16.p + off) : nullptr, c.split},
                     nullptr);
  CU(cudaDeviceSynchronize());
  CU(cudaGetLastError());
  NormOut o;
  o.x = x.get(off);
  o.y = y.get(off);
  if (c.y16) o.y16 = y16.get(off, c.split ? 2 * xn : xn);
  return o;
}

}  // namespace

TEST_CASE("add_rmsnorm matches a host reference and keeps the row's bits alone and among 64 rows") {
  int devices = 0;
  REQUIRE(cudaGetDeviceCount(&devices) == cudaSuccess);
  REQUIRE(devices > 0);
  const float eps = 1e-5f;
  for (int n : {18, 48, 64, 896, 2048, 3072, 4096, 5001, 8192, 16384, 20000}) {
    const int rows = 64;
    const NormInputs in = norm_inputs(n, rows, unsigned(n));
    for (int variant = 0; variant < 8; ++variant) {
      // 6, 7: the split GEMM's form (delta_rem in, hi and remainder rows out), 7 with write-back and a row map.
      NormCase c{n, rows, variant != 0, variant >= 2, variant == 2 || variant == 4 || variant == 7, variant >= 3,
                 variant == 5 || variant == 7, variant >= 6};
      INFO("n " << n << ", variant " << variant);
      const NormOut got = run_norm(c, in, eps);
      // The host reference: v rounded as the kernel rounds it, the norm in double.
      size_t bad = 0, bad_x = 0, bad16 = 0;
      float worst = 0.0f;
      for (int i = 0; i < rows; ++i) {
        const int s = c.row_map ? in.map[size_t(i)] : i;
        std::vector<float> v(static_cast<size_t>(n));
        double ss = 0.0;
        for (int j = 0; j < n; ++j) {
          float x = in.x[size_t(s) * n + j];
          float d = in.delta[size_t(s) * n + j];
          if (c.split) d = d + in.delta_rem[size_t(s) * n + j];
          if (c.delta) x = x + (c.bias ? d + in.bias[size_t(j)] : d);
          v[size_t(j)] = x;
          ss += double(x) * double(x);
        }
        const double inv = 1.0 / std::sqrt(ss / n + double(eps));
        for (int j = 0; j < n; ++j) {
          const double ref = double(in.weight[size_t(j)]) * (double(v[size_t(j)]) * inv);
          const float g = got.y[size_t(i) * n + j];
          const double rel = std::fabs(double(g) - ref) / std::max(std::fabs(ref), 1e-30);
          worst = std::max(worst, float(rel));
          if (!(rel <= 1e-6)) ++bad;
          if (c.y16 && got.y16[size_t(i) * n + j] != bf16_rn(g)) ++bad16;
          if (c.split && got.y16[size_t(rows + i) * n + j] != bf16_rem(g)) ++bad16;
          const float want_x = c.write_back && c.delta ? v[size_t(j)] : in.x[size_t(s) * n + j];
          if (std::memcmp(&got.x[size_t(s) * n + j], &want_x, 4) != 0) ++bad_x;
        }
      }
      INFO("worst relative error " << worst);
      CHECK(bad == 0);
      CHECK(bad_x == 0);
      CHECK(bad16 == 0);
      if (c.y16) {  // without the fp32 output: the same bf16 (and x), y untouched
        NormCase bare = c;
        bare.no_y = true;
        const NormOut b = run_norm(bare, in, eps);
        INFO("bf16 output only");
        CHECK(b.y16 == got.y16);
        CHECK(same_bits(b.x.data(), got.x.data(), got.x.size()));
        CHECK(std::all_of(b.y.begin(), b.y.end(), [](float v) { return std::isnan(v); }));
      }

      // Row k alone (row_map names it; write_back off so x stays the same) gives the bits of row k among 64,
      // and so do scalar loads (every buffer shifted by one float).
      if (!c.write_back) {
        for (int k : {0, 13, 63}) {
          const size_t xn = size_t(rows) * n;
          Dev<float> x(xn), delta(xn), drem(xn), bias{size_t(n)}, weight{size_t(n)}, y{size_t(n)};
          Dev<int> map(1);
          x.put(in.x);
          delta.put(in.delta);
          drem.put(in.delta_rem);
          bias.put(in.bias);
          weight.put(in.weight);
          map.put({c.row_map ? in.map[size_t(k)] : k});
          launch_add_rmsnorm(x.p, c.delta ? delta.p : nullptr, c.split ? drem.p : nullptr, c.bias ? bias.p : nullptr,
                             weight.p, map.p, 1, n, eps, false, y.p, Bf16Out{}, nullptr);
          CU(cudaDeviceSynchronize());
          const std::vector<float> y1 = y.get();
          INFO("row " << k << " alone");
          CHECK(same_bits(y1.data(), &got.y[size_t(k) * n], size_t(n)));
        }
        NormCase shifted = c;
        shifted.offset = 1;
        const NormOut s = run_norm(shifted, in, eps);
        INFO("scalar loads");
        CHECK(same_bits(s.y.data(), got.y.data(), got.y.size()));
      }
    }
  }
}

TEST_CASE("attention and add_rmsnorm decode-shape speed (printed, not asserted)") {
  int devices = 0;
  REQUIRE(cudaGetDeviceCount(&devices) == cudaSuccess);
  REQUIRE(devices > 0);
  cudaEvent_t e0, e1;
  CU(cudaEventCreate(&e0));
  CU(cudaEventCreate(&e1));
  const int iters = 200;
  // Llama-3.2-1B (head_dim 64) and Llama-3.1-8B (head_dim 128): 32 q / 8 kv heads, one decode row at position
  // 260, and 64 or 128 such rows of as many slots.
  struct SpeedCase {
    int hd, rows, context;
  };
  for (const SpeedCase sc : {SpeedCase{64, 1, 1024}, SpeedCase{64, 64, 1024}, SpeedCase{128, 1, 512},
                             SpeedCase{128, 128, 512}}) {
    const int hd = sc.hd, rows = sc.rows, context = sc.context, heads = 32, kv_heads = 8;
    const int q_dim = heads * hd, kv_dim = kv_heads * hd, stride = q_dim + 2 * kv_dim;
    const int max_splits = context / kAttnSplit;
    std::vector<int> pos(size_t(rows), 260), slot(static_cast<size_t>(rows)), tf(static_cast<size_t>(rows)),
        tr(size_t(rows), 1);
    for (int i = 0; i < rows; ++i) slot[size_t(i)] = tf[size_t(i)] = i;
    Dev<float> qkv(size_t(rows) * stride), part_acc(size_t(rows) * heads * max_splits * hd),
        part_ml(size_t(rows) * heads * max_splits * 2), out(size_t(rows) * q_dim);
    qkv.put(std::vector<float>(size_t(rows) * stride, 0.5f));
    Dev<int> d_pos{size_t(rows)}, d_slot{size_t(rows)}, d_tf{size_t(rows)}, d_tr{size_t(rows)}, d_nt(1);
    d_pos.put(pos);
    d_slot.put(slot);
    d_tf.put(tf);
    d_tr.put(tr);
    d_nt.put({rows});
    const int bs = 16, per_slot = context / bs, blocks = rows * per_slot;
    const size_t layer = size_t(blocks) * bs * kv_dim;
    Dev<float> k(layer), v(layer);
    k.put(std::vector<float>(layer, 0.25f));
    v.put(std::vector<float>(layer, 0.5f));
    std::vector<int32_t> table(static_cast<size_t>(blocks));
    for (int i = 0; i < blocks; ++i) table[size_t(i)] = i;
    Dev<int32_t> d_table(table.size());
    d_table.put(table);
    AttentionParams ap;
    ap.qkv = qkv.p;
    ap.qkv_stride = stride;
    ap.kv.k = k.p;
    ap.kv.v = v.p;
    ap.kv.block_table = d_table.p;
    ap.kv.table_stride = per_slot;
    ap.kv.block_size = bs;
    ap.kv.layer_offset = 0;
    ap.kv.kv_dim = kv_dim;
    ap.n_heads = heads;
    ap.n_kv_heads = kv_heads;
    ap.head_dim = hd;
    ap.scale = 0.125f;
    ap.pos = d_pos.p;
    ap.slot = d_slot.p;
    ap.tile_first = d_tf.p;
    ap.tile_rows = d_tr.p;
    ap.n_tiles = d_nt.p;
    ap.max_tiles = rows;
    ap.max_splits = max_splits;
    ap.grid_splits = 4;  // the window metadata's power of two above the 3 splits position 260 needs
    ap.rows = rows;
    ap.part_acc = part_acc.p;
    ap.part_ml = part_ml.p;
    ap.out = out.p;
    configure_attention(hd);
    launch_attention(ap, nullptr);
    CU(cudaDeviceSynchronize());
    CU(cudaEventRecord(e0));
    for (int i = 0; i < iters; ++i) launch_attention(ap, nullptr);
    CU(cudaEventRecord(e1));
    CU(cudaEventSynchronize(e1));
    float ms = 0.0f;
    CU(cudaEventElapsedTime(&ms, e0, e1));
    std::printf("attention (partial + combine), %d decode row(s) at position 260, 32/8 heads, hd %d: %.2f us\n", rows,
                hd, double(ms) * 1e3 / iters);
  }
  for (int n : {2048, 4096, 8192}) {
    for (int rows : {1, 64, 512}) {
      const size_t xn = size_t(rows) * n;
      Dev<float> x(xn), delta(xn), weight{size_t(n)}, y(xn);
      x.put(std::vector<float>(xn, 1.0f));
      delta.put(std::vector<float>(xn, 0.0f));
      weight.put(std::vector<float>(size_t(n), 1.0f));
      launch_add_rmsnorm(x.p, delta.p, nullptr, nullptr, weight.p, nullptr, rows, n, 1e-5f, true, y.p, Bf16Out{}, nullptr);
      CU(cudaDeviceSynchronize());
      CU(cudaEventRecord(e0));
      for (int i = 0; i < iters; ++i)
        launch_add_rmsnorm(x.p, delta.p, nullptr, nullptr, weight.p, nullptr, rows, n, 1e-5f, true, y.p, Bf16Out{},
                           nullptr);
      CU(cudaEventRecord(e1));
      CU(cudaEventSynchronize(e1));
      float ms = 0.0f;
      CU(cudaEventElapsedTime(&ms, e0, e1));
      std::printf("add_rmsnorm %d x %d (write back): %.2f us\n", rows, n, double(ms) * 1e3 / iters);
    }
  }
  CU(cudaGetLastError());
  cudaEventDestroy(e0);
  cudaEventDestroy(e1);
}
