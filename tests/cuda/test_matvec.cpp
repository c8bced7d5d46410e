// The skinny matmul kernels on the GPU: a row gets the same bits whatever the window and is close to the exact
// product, and the fused gate/up + SwiGLU kernel gives the bits of the skinny matmul followed by the SwiGLU
// kernel, for every tile size, bf16 and fp32 weights.
#include <catch2/catch.hpp>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "cuda/cuda_backend.hpp"
#include "cuda/device_buffer.hpp"
#include "cuda/gemm.hpp"
#include "cuda/kernels/kernels.hpp"
#include "tests/cuda/cuda_test_buffers.hpp"

using namespace strata;
using namespace strata::cuda;

namespace {

using cuda_test::bf16_rn;
using cuda_test::Dev;

template <class T>
DeviceBuffer upload(const std::vector<T>& v) {
  DeviceBuffer b(v.size() * sizeof(T), "test buffer");
  REQUIRE(cudaMemcpy(b.get(), v.data(), v.size() * sizeof(T), cudaMemcpyHostToDevice) == cudaSuccess);
  return b;
}

std::vector<float> download(const DeviceBuffer& b, size_t n) {
  std::vector<float> v(n);
  REQUIRE(cudaMemcpy(v.data(), b.get(), n * 4, cudaMemcpyDeviceToHost) == cudaSuccess);
  return v;
}

}  // namespace

TEST_CASE("the fused gate/up + SwiGLU skinny kernel gives the bits of matvec then swiglu") {
  REQUIRE(CudaBackend::device_count() > 0);
  cudaStream_t st = nullptr;
  REQUIRE(cudaStreamCreate(&st) == cudaSuccess);
  std::mt19937 rng(7);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  for (WType t : {WType::BF16, WType::F32}) {
    for (int rows : {1, 2, 3, 5, 8, 13, 16, 33, 40, 64, 100}) {
      const int ff = 200, k = 264;  // k: a multiple of 8 that is not a multiple of 32 * 8 (a partial last batch)
      std::vector<float> x(size_t(rows) * k), wf(size_t(2) * ff * k);
      for (float& v : x) v = nd(rng);
      for (float& v : wf) v = nd(rng) * 0.1f;
      DeviceBuffer w;
      if (t == WType::BF16) {
        std::vector<uint16_t> wb(wf.size());
        for (size_t i = 0; i < wf.size(); ++i) wb[i] = bf16_rn(wf[i]);
        w = upload(wb);
      } else {
        w = upload(wf);
      }
      DeviceBuffer dx = upload(x);
      DeviceBuffer gu(size_t(rows) * 2 * ff * 4, "gu"), act(size_t(rows) * ff * 4, "act"),
          fused(size_t(rows) * ff * 4, "fused");
      launch_matvec(w.get(), t, 2 * ff, k, dx.get<float>(), rows, gu.get<float>(), st);
      launch_swiglu(gu.get<float>(), nullptr, rows, ff, act.get<float>(), Bf16Out{}, st);
      launch_matvec_swiglu(w.get(), t, ff, k, dx.get<float>(), rows, fused.get<float>(), st);
      REQUIRE(cudaStreamSynchronize(st) == cudaSuccess);
      const std::vector<float> a = download(act, size_t(rows) * ff), b = download(fused, size_t(rows) * ff);
      INFO("rows " << rows << (t == WType::BF16 ? " bf16" : " f32"));
      REQUIRE(std::memcmp(a.data(), b.data(), a.size() * 4) == 0);
      // And the value is what it claims: silu(gate) * up within float rounding of a host computation.
      const std::vector<float> g = download(gu, size_t(rows) * 2 * ff);
      for (int r = 0; r < rows; ++r)
        for (int i = 0; i < ff; i += 37) {
          const float gate = g[size_t(r) * 2 * ff + i], up = g[size_t(r) * 2 * ff + ff + i];
          CHECK(b[size_t(r) * ff + i] == Approx(gate / (1.0f + std::exp(-gate)) * up).epsilon(1e-5).margin(1e-6));
        }
    }
  }
  cudaStreamDestroy(st);
}

TEST_CASE("SwiGLU gives the same bits on its 16-byte and scalar paths, with or without the fp32 row") {
  REQUIRE(CudaBackend::device_count() > 0);
  std::mt19937 rng(11);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  for (int ff : {200, 202}) {  // 202: not a multiple of 4, so every run takes the scalar path
    const int rows = 3;
    const size_t n = size_t(rows) * 2 * ff, an = size_t(rows) * ff;
    std::vector<float> gu(n), rem(n);
    for (float& v : gu) v = nd(rng) * 2.0f;
    for (float& v : rem) v = nd(rng) * 1e-3f;
    // The same inputs again one float past a 16-byte boundary, which takes the scalar path.
    std::vector<float> gu1(1, 0.0f), rem1(1, 0.0f);
    gu1.insert(gu1.end(), gu.begin(), gu.end());
    rem1.insert(rem1.end(), rem.begin(), rem.end());
    DeviceBuffer dgu = upload(gu), drem = upload(rem), dgu1 = upload(gu1), drem1 = upload(rem1);
    struct Run {
      std::vector<float> act;
      std::vector<uint16_t> a16;
    };
    auto run = [&](const float* g, const float* r, bool with_act) {
      DeviceBuffer act(an * 4, "act"), a16(2 * an * 2, "act16");
      REQUIRE(cudaMemset(act.get(), 0xff, an * 4) == cudaSuccess);
      launch_swiglu(g, r, rows, ff, with_act ? act.get<float>() : nullptr, Bf16Out{a16.get(), true}, nullptr);
      REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
      Run out;
      out.act = download(act, an);
      out.a16.resize(2 * an);
      REQUIRE(cudaMemcpy(out.a16.data(), a16.get(), 2 * an * 2, cudaMemcpyDeviceToHost) == cudaSuccess);
      return out;
    };
    const Run full = run(dgu.get<float>(), drem.get<float>(), true);
    const Run bf_only = run(dgu.get<float>(), drem.get<float>(), false);
    const Run scalar = run(dgu1.get<float>() + 1, drem1.get<float>() + 1, true);
    INFO("ff " << ff);
    CHECK(bf_only.a16 == full.a16);
    CHECK(scalar.a16 == full.a16);
    CHECK(std::memcmp(scalar.act.data(), full.act.data(), an * 4) == 0);
    for (float v : bf_only.act) REQUIRE(std::isnan(v));  // no fp32 row asked: its buffer keeps the 0xff fill
    for (size_t i = 0; i < an; ++i) {
      const size_t gi = (i / size_t(ff)) * 2 * size_t(ff) + i % size_t(ff);
      const float g = gu[gi] + rem[gi], u = gu[gi + ff] + rem[gi + ff];
      CHECK(full.act[i] == Approx(g / (1.0f + std::exp(-g)) * u).epsilon(1e-5).margin(1e-6));
      REQUIRE(full.a16[i] == bf16_rn(full.act[i]));
      REQUIRE(full.a16[an + i] == cuda_test::bf16_rem(full.act[i]));
    }
  }
}

TEST_CASE("the skinny matmul gives a row the same bits in windows of 1 to 200 rows, close to an exact product") {
  REQUIRE(CudaBackend::device_count() > 0);
  cudaStream_t st = nullptr;
  REQUIRE(cudaStreamCreate(&st) == cudaSuccess);
  std::mt19937 rng(11);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  for (WType t : {WType::BF16, WType::F32}) {
    // n: not a multiple of the 16-output tiles; k: a multiple of 8 but not of the 32-element chunks, and long
    // enough that every warp of a block takes several chunks.
    const int n = 203, k = 2056, max_rows = 200;
    std::vector<float> x(size_t(max_rows) * k), wf(size_t(n) * k);
    for (float& v : x) v = nd(rng);
    for (float& v : wf) v = nd(rng) * 0.05f;
    DeviceBuffer w;
    if (t == WType::BF16) {
      std::vector<uint16_t> wb(wf.size());
      for (size_t i = 0; i < wf.size(); ++i) {
        wb[i] = bf16_rn(wf[i]);
        const uint32_t u = uint32_t(wb[i]) << 16;
        std::memcpy(&wf[i], &u, 4);  // the host reference uses the rounded weights
      }
      w = upload(wb);
    } else {
      w = upload(wf);
    }
    DeviceBuffer dx = upload(x);
    DeviceBuffer dy(size_t(max_rows) * n * 4, "y");
    // Row r alone (a one-row launch on its own x row) is the reference for the bits.
    std::vector<float> alone(size_t(max_rows) * n);
    for (int r = 0; r < max_rows; ++r) {
      launch_matvec(w.get(), t, n, k, dx.get<float>() + size_t(r) * k, 1, dy.get<float>() + size_t(r) * n, st);
    }
    REQUIRE(cudaStreamSynchronize(st) == cudaSuccess);
    alone = download(dy, alone.size());
    for (int rows : {2, 3, 8, 9, 16, 17, 31, 32, 33, 64, 65, 200}) {
      REQUIRE(cudaMemset(dy.get(), 0xff, size_t(max_rows) * n * 4) == cudaSuccess);
      launch_matvec(w.get(), t, n, k, dx.get<float>(), rows, dy.get<float>(), st);
      REQUIRE(cudaStreamSynchronize(st) == cudaSuccess);
      const std::vector<float> got = download(dy, size_t(max_rows) * n);
      INFO(rows << " rows" << (t == WType::BF16 ? " bf16" : " f32"));
      REQUIRE(std::memcmp(got.data(), alone.data(), size_t(rows) * n * 4) == 0);
      // Nothing past the window's rows is written.
      for (size_t i = size_t(rows) * n; i < got.size(); i += 97) REQUIRE(std::isnan(got[i]));
    }
    // Close to the exact product: the bf16 split of the activations keeps 16 significant bits.
    for (int r = 0; r < max_rows; r += 13)
      for (int j = 0; j < n; j += 7) {
        double exact = 0, mag = 0;
        for (int i = 0; i < k; ++i) {
          exact += double(wf[size_t(j) * k + i]) * x[size_t(r) * k + i];
          mag += std::fabs(double(wf[size_t(j) * k + i]) * x[size_t(r) * k + i]);
        }
        INFO("row " << r << " output " << j << (t == WType::BF16 ? " bf16" : " f32"));
        CHECK(std::fabs(alone[size_t(r) * n + j] - exact) <= 2e-5 * mag);
      }
  }
  cudaStreamDestroy(st);
}

namespace {

// The fused GEMV's three epilogues against a double-precision host computation on the same bf16 weights.
struct GemvCase {
  int n, k;
  bool norm;
  GemvEpilogue ep;
};

void check_gemv(const GemvCase& gc, std::mt19937& rng, cudaStream_t st) {
  std::normal_distribution<float> nd(0.0f, 1.0f);
  const int rows_w = gc.ep == GemvEpilogue::Swiglu ? 2 * gc.n : gc.n;
  std::vector<uint16_t> wb(size_t(rows_w) * gc.k);
  std::vector<double> wd(wb.size());
  for (size_t i = 0; i < wb.size(); ++i) {
    wb[i] = bf16_rn(nd(rng) * 0.05f);
    wd[i] = cuda_test::bf16_value(wb[i]);
  }
  std::vector<float> x(gc.k), nw(gc.k), bias(gc.n), y0(gc.n);
  for (float& v : x) v = nd(rng) * 3.0f;
  for (float& v : nw) v = 1.0f + 0.2f * nd(rng);
  for (float& v : bias) v = nd(rng);
  for (float& v : y0) v = nd(rng);
  // The matmul's input as the kernel sees it: x, or its RMSNorm (fp32 arithmetic is within 1e-6 of this).
  std::vector<double> in(gc.k);
  double ss = 0;
  for (float v : x) ss += double(v) * v;
  const double inv = 1.0 / std::sqrt(ss / gc.k + 1e-5);
  for (int i = 0; i < gc.k; ++i) in[i] = gc.norm ? double(nw[i]) * (x[i] * inv) : x[i];
  auto dot = [&](int row, double* mag) {
    double s = 0, m = 0;
    for (int i = 0; i < gc.k; ++i) {
      s += wd[size_t(row) * gc.k + i] * in[i];
      m += std::fabs(wd[size_t(row) * gc.k + i] * in[i]);
    }
    *mag = m;
    return s;
  };
  DeviceBuffer dw = upload(wb), dx = upload(x), dn = upload(nw), db = upload(bias), dy = upload(y0);
  GemvParams p;
  p.w = dw.get();
  p.n = gc.n;
  p.k = gc.k;
  p.x = dx.get<float>();
  p.norm = gc.norm ? dn.get<float>() : nullptr;
  p.eps = 1e-5f;
  p.ep = gc.ep;
  p.bias = gc.ep == GemvEpilogue::Residual ? db.get<float>() : nullptr;
  p.y = dy.get<float>();
  launch_gemv(p, st);
  REQUIRE(cudaStreamSynchronize(st) == cudaSuccess);
  const std::vector<float> got = download(dy, gc.n);
  INFO("n " << gc.n << " k " << gc.k << " norm " << gc.norm << " epilogue " << int(gc.ep));
  for (int j = 0; j < gc.n; ++j) {
    double mag = 0, want = 0, tol = 0;
    const double s = dot(j, &mag);
    if (gc.ep == GemvEpilogue::Store) {
      want = s;
      tol = 1e-5 * mag + 1e-6;
    } else if (gc.ep == GemvEpilogue::Residual) {
      want = double(y0[j]) + (s + bias[j]);
      tol = 1e-5 * mag + 1e-5 * std::fabs(want) + 1e-6;
    } else {
      double mag_u = 0;
      const double u = dot(gc.n + j, &mag_u);
      const double silu = s / (1.0 + std::exp(-s));
      want = silu * u;
      tol = 1e-5 * (mag * std::fabs(u) + mag_u * std::fabs(silu)) + 1e-6;
    }
    if (std::fabs(got[j] - want) > tol) {
      INFO("output " << j << " got " << got[j] << " want " << want);
      REQUIRE(std::fabs(got[j] - want) <= tol);
    }
  }
  // Deterministic: a second launch gives the same bits (the Residual epilogue adds onto y, so reset it).
  REQUIRE(cudaMemcpy(dy.get(), y0.data(), y0.size() * 4, cudaMemcpyHostToDevice) == cudaSuccess);
  launch_gemv(p, st);
  REQUIRE(cudaStreamSynchronize(st) == cudaSuccess);
  const std::vector<float> again = download(dy, gc.n);
  REQUIRE(std::memcmp(again.data(), got.data(), got.size() * 4) == 0);
  if (gc.ep == GemvEpilogue::Residual) {  // the residual values read before the wait: the same bits
    REQUIRE(cudaMemcpy(dy.get(), y0.data(), y0.size() * 4, cudaMemcpyHostToDevice) == cudaSuccess);
    p.y_settled = true;
    launch_gemv(p, st);
    REQUIRE(cudaStreamSynchronize(st) == cudaSuccess);
    const std::vector<float> early = download(dy, gc.n);
    REQUIRE(std::memcmp(early.data(), got.data(), got.size() * 4) == 0);
  }
}

}  // namespace

TEST_CASE("the fused GEMV matches a host reference for every epilogue, with and without the input norm") {
  REQUIRE(CudaBackend::device_count() > 0);
  cudaStream_t st = nullptr;
  REQUIRE(cudaStreamCreate(&st) == cudaSuccess);
  configure_gemv();
  std::mt19937 rng(23);
  // k: multiples of 8 that end inside a 256-element chunk (264, 2056) or a load step (1280), and a long row
  // (14336, the 8B down projection); n: one output, fewer outputs than warps, and many outputs per warp (9000:
  // more tasks a warp than the Residual epilogue reads before the wait).
  const std::vector<GemvCase> cases = {
      {1, 264, false, GemvEpilogue::Store},      {203, 2056, true, GemvEpilogue::Store},
      {5000, 1280, true, GemvEpilogue::Store},   {203, 2056, false, GemvEpilogue::Residual},
      {4096, 14336, false, GemvEpilogue::Residual}, {200, 264, true, GemvEpilogue::Swiglu},
      {3000, 2048, false, GemvEpilogue::Swiglu}, {9000, 264, false, GemvEpilogue::Residual},
  };
  for (const GemvCase& gc : cases) check_gemv(gc, rng, st);
  cudaStreamDestroy(st);
}

TEST_CASE("the autotuned cuBLASLt GEMM matches cuBLAS's default, in and out of graph captures") {
  REQUIRE(CudaBackend::device_count() > 0);
  cudaStream_t st = nullptr;
  REQUIRE(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking) == cudaSuccess);
  cublasHandle_t blas = nullptr;
  REQUIRE(cublasCreate(&blas) == CUBLAS_STATUS_SUCCESS);
  REQUIRE(cublasSetStream(blas, st) == CUBLAS_STATUS_SUCCESS);
  DeviceBuffer ws(size_t(32) << 20, "cuBLAS workspace");
  REQUIRE(cublasSetWorkspace(blas, ws.get(), ws.bytes()) == CUBLAS_STATUS_SUCCESS);
  Gemm tuned(blas, st, ws.get(), ws.bytes(), true), plain(blas, st, ws.get(), ws.bytes(), false);
  CHECK(tuned.flush_bytes() >= (size_t(1) << 20));
  CHECK(plain.flush_bytes() == 0);
  std::mt19937 rng(11);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  int shapes = 0;
  for (int rows : {1, 7, 64, 130}) {
    const int n = 328, k = 520;
    std::vector<uint16_t> wb(size_t(n) * k), xb(size_t(rows) * k);
    for (auto& v : wb) v = bf16_rn(nd(rng) * 0.1f);
    for (auto& v : xb) v = bf16_rn(nd(rng));
    DeviceBuffer dw = upload(wb), dx = upload(xb), y1(size_t(rows) * n * 4, "y1"), y2(size_t(rows) * n * 4, "y2");
    DeviceMatrix m;
    m.ptr = dw.get();
    m.type = WType::BF16;
    m.rows = n;
    m.cols = k;
    plain.run(m, dx.get(), rows, y1.get<float>());
    tuned.run(m, dx.get(), rows, y2.get<float>());  // timed here, the winner kept
    ++shapes;
    CHECK(tuned.tuned_shapes() == shapes);
    REQUIRE(cudaStreamSynchronize(st) == cudaSuccess);
    const std::vector<float> a = download(y1, size_t(rows) * n), b = download(y2, size_t(rows) * n);
    double worst = 0.0;
    for (size_t i = 0; i < a.size(); ++i) worst = std::max(worst, double(std::fabs(a[i] - b[i])) / (1.0 + std::fabs(a[i])));
    CHECK(worst < 1e-4);  // both fp32 sums of the same bf16 products, in different orders
    {
      // Another Gemm of the process (another backend) takes the kept choice: the same bits, no new timing.
      Gemm again(blas, st, ws.get(), ws.bytes(), true);
      DeviceBuffer y3(size_t(rows) * n * 4, "y3");
      again.run(m, dx.get(), rows, y3.get<float>());
      REQUIRE(cudaStreamSynchronize(st) == cudaSuccess);
      const std::vector<float> c = download(y3, size_t(rows) * n);
      CHECK(std::memcmp(b.data(), c.data(), b.size() * 4) == 0);
      CHECK(again.tuned_shapes() == 1);
    }

    // Replayed from a graph (the kept algorithm), and a shape first met inside a capture (untimed, not kept).
    for (int fresh : {0, 1}) {
      const int r = fresh ? rows + 1 : rows;
      std::vector<uint16_t> xr(size_t(r) * k);
      for (auto& v : xr) v = bf16_rn(nd(rng));
      DeviceBuffer dxr = upload(xr), yr(size_t(r) * n * 4, "yr"), yp(size_t(r) * n * 4, "yp");
      REQUIRE(cudaMemset(yr.get(), 0, yr.bytes()) == cudaSuccess);
      cudaGraph_t g = nullptr;
      cudaGraphExec_t exec = nullptr;
      REQUIRE(cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal) == cudaSuccess);
      tuned.run(m, dxr.get(), r, yr.get<float>());
      REQUIRE(cudaStreamEndCapture(st, &g) == cudaSuccess);
      CHECK(tuned.tuned_shapes() == shapes);
      REQUIRE(cudaGraphInstantiate(&exec, g, 0) == cudaSuccess);
      REQUIRE(cudaGraphLaunch(exec, st) == cudaSuccess);
      plain.run(m, dxr.get(), r, yp.get<float>());
      REQUIRE(cudaStreamSynchronize(st) == cudaSuccess);
      cudaGraphExecDestroy(exec);
      cudaGraphDestroy(g);
      const std::vector<float> c = download(yr, size_t(r) * n), d = download(yp, size_t(r) * n);
      double w2 = 0.0;
      for (size_t i = 0; i < c.size(); ++i) w2 = std::max(w2, double(std::fabs(c[i] - d[i])) / (1.0 + std::fabs(d[i])));
      CHECK(w2 < 1e-4);
    }
  }
  cublasDestroy(blas);
  cudaStreamDestroy(st);
}

TEST_CASE("the skinny kernel's folded residual add and norm match the separate kernels and keep a row's bits") {
  REQUIRE(CudaBackend::device_count() > 0);
  cudaStream_t st = nullptr;
  REQUIRE(cudaStreamCreate(&st) == cudaSuccess);
  std::mt19937 rng(23);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  // h: the residual rows (n = 200 wide, not a multiple of the 16-output parts); o: n x ko, the sub-layer's
  // output projection; q: nq x n, the next matmul (its input normed); gu: the stacked [gate | up] of ff rows.
  const int n = 200, ko = 264, nq = 72, ff = 40, max_rows = 40;
  const float eps = 1e-6f;
  auto bf16_matrix = [&](int rows, int cols, float scale) {
    std::vector<uint16_t> wb(size_t(rows) * cols);
    for (auto& v : wb) v = bf16_rn(nd(rng) * scale);
    return upload(wb);
  };
  DeviceBuffer wo = bf16_matrix(n, ko, 0.05f), wq = bf16_matrix(nq, n, 0.1f), wgu = bf16_matrix(2 * ff, n, 0.1f);
  std::vector<float> h(size_t(max_rows) * n), att(size_t(max_rows) * ko), bias(n), norm(n);
  for (float& v : h) v = nd(rng) * 3.0f;
  for (float& v : att) v = nd(rng);
  for (float& v : bias) v = nd(rng) * 0.1f;
  for (float& v : norm) v = 1.0f + 0.2f * nd(rng);
  DeviceBuffer dh0 = upload(h), datt = upload(att), dbias = upload(bias), dnorm = upload(norm);
  const size_t hb = h.size() * 4, parts = (n + 15) / 16;

  // The separate kernels: o into tmp, then add_rmsnorm (residual written back) into xn, then q and gu.
  DeviceBuffer dh(hb, "h"), tmp(hb, "tmp"), xn(hb, "xn"), q_ref(size_t(max_rows) * nq * 4, "q"),
      a_ref(size_t(max_rows) * ff * 4, "act");
  REQUIRE(cudaMemcpy(dh.get(), dh0.get(), hb, cudaMemcpyDeviceToDevice) == cudaSuccess);
  launch_matvec(wo.get(), WType::BF16, n, ko, datt.get<float>(), max_rows, tmp.get<float>(), st);
  launch_add_rmsnorm(dh.get<float>(), tmp.get<float>(), nullptr, dbias.get<float>(), dnorm.get<float>(), nullptr,
                     max_rows, n, eps, true, xn.get<float>(), Bf16Out{}, st);
  launch_matvec(wq.get(), WType::BF16, nq, n, xn.get<float>(), max_rows, q_ref.get<float>(), st);
  launch_matvec_swiglu(wgu.get(), WType::BF16, ff, n, xn.get<float>(), max_rows, a_ref.get<float>(), st);
  REQUIRE(cudaStreamSynchronize(st) == cudaSuccess);
  const std::vector<float> h_ref = download(dh, h.size()), q_want = download(q_ref, size_t(max_rows) * nq),
                           a_want = download(a_ref, size_t(max_rows) * ff);

  // The folded form on a window of `rows` rows starting at row r0.
  DeviceBuffer fh(hb, "h"), fxn(hb, "xn"), ss(size_t(max_rows) * parts * 4, "ss"),
      fq(size_t(max_rows) * nq * 4, "q"), fa(size_t(max_rows) * ff * 4, "act");
  auto folded = [&](int r0, int rows) {
    MatvecFold res;
    res.bias = dbias.get<float>();
    res.ss_out = ss.get<float>() + size_t(r0) * parts;
    res.next_norm = dnorm.get<float>();
    res.xn_out = fxn.get<float>() + size_t(r0) * n;
    launch_matvec(wo.get(), WType::BF16, n, ko, datt.get<float>() + size_t(r0) * ko, rows,
                  fh.get<float>() + size_t(r0) * n, st, res);
    MatvecFold nrm;
    nrm.ss_in = res.ss_out;
    nrm.eps = eps;
    launch_matvec(wq.get(), WType::BF16, nq, n, res.xn_out, rows, fq.get<float>() + size_t(r0) * nq, st, nrm);
    launch_matvec_swiglu(wgu.get(), WType::BF16, ff, n, res.xn_out, rows, fa.get<float>() + size_t(r0) * ff, st,
                         nrm);
  };
  REQUIRE(cudaMemcpy(fh.get(), dh0.get(), hb, cudaMemcpyDeviceToDevice) == cudaSuccess);
  for (int r = 0; r < max_rows; ++r) folded(r, 1);
  REQUIRE(cudaStreamSynchronize(st) == cudaSuccess);
  const std::vector<float> h_alone = download(fh, h.size()), q_alone = download(fq, size_t(max_rows) * nq),
                           a_alone = download(fa, size_t(max_rows) * ff);
  // The residual add rounds as add_rmsnorm's does: the same bits; xn_out is norm * h.
  REQUIRE(std::memcmp(h_alone.data(), h_ref.data(), hb) == 0);
  const std::vector<float> xn_alone = download(fxn, h.size());
  for (size_t i = 0; i < h.size(); ++i) REQUIRE(xn_alone[i] == norm[i % size_t(n)] * h_ref[i]);
  // The norm's sum of squares is added in another order and its scale applied after the products: close to
  // the separate kernels (whose outputs here are of order 1), not their bits.
  for (size_t i = 0; i < q_want.size(); ++i) {
    INFO("q element " << i);
    REQUIRE(q_alone[i] == Approx(q_want[i]).epsilon(1e-4).margin(1e-4));
  }
  for (size_t i = 0; i < a_want.size(); ++i) {
    INFO("act element " << i);
    REQUIRE(a_alone[i] == Approx(a_want[i]).epsilon(1e-4).margin(1e-4));
  }
  // And a row gets the bits it gets alone in windows of any size (tiles of 8, 16 and more rows).
  for (int rows : {2, 5, 8, 9, 16, 17, 33, 40}) {
    REQUIRE(cudaMemcpy(fh.get(), dh0.get(), hb, cudaMemcpyDeviceToDevice) == cudaSuccess);
    REQUIRE(cudaMemset(fq.get(), 0xff, size_t(max_rows) * nq * 4) == cudaSuccess);
    folded(0, rows);
    REQUIRE(cudaStreamSynchronize(st) == cudaSuccess);
    INFO(rows << " rows");
    const std::vector<float> gh = download(fh, h.size()), gq = download(fq, size_t(max_rows) * nq),
                             ga = download(fa, size_t(max_rows) * ff);
    REQUIRE(std::memcmp(gh.data(), h_alone.data(), size_t(rows) * n * 4) == 0);
    REQUIRE(std::memcmp(gq.data(), q_alone.data(), size_t(rows) * nq * 4) == 0);
    REQUIRE(std::memcmp(ga.data(), a_alone.data(), size_t(rows) * ff * 4) == 0);
    for (size_t i = size_t(rows) * nq; i < gq.size(); i += 31) REQUIRE(std::isnan(gq[i]));  // nothing past them
    // Rows past the window keep the residual they had.
    REQUIRE(std::memcmp(gh.data() + size_t(rows) * n, h.data() + size_t(rows) * n, size_t(max_rows - rows) * n * 4) == 0);
  }
  cudaStreamDestroy(st);
}

TEST_CASE("the skinny kernel's residual from a token table and its normed-input rows") {
  REQUIRE(CudaBackend::device_count() > 0);
  cudaStream_t st = nullptr;
  REQUIRE(cudaStreamCreate(&st) == cudaSuccess);
  std::mt19937 rng(29);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  // A feature-reading model's first matmul (forward.cpp): y = table[token] + W x, then the next matmul reading
  // y normed, which also hands back its normed input rows (x_normed_out).
  const int n = 208, k = 96, V = 37, rows = 11, feed_n = 4, nq = 48;
  const float eps = 1e-6f;
  std::vector<uint16_t> wb(size_t(n) * k), wqb(size_t(nq) * n);
  for (auto& v : wb) v = bf16_rn(nd(rng) * 0.1f);
  for (auto& v : wqb) v = bf16_rn(nd(rng) * 0.1f);
  std::vector<float> table(size_t(V) * n), x(size_t(rows) * k), norm(n);
  for (float& v : table) v = nd(rng) * 2.0f;
  for (float& v : x) v = nd(rng);
  for (float& v : norm) v = 1.0f + 0.2f * nd(rng);
  std::vector<int> tokens(rows), picks(feed_n);
  for (int& t : tokens) t = int(rng() % V);
  for (int& t : picks) t = int(rng() % V);
  DeviceBuffer dw = upload(wb), dwq = upload(wqb), dtable = upload(table), dx = upload(x), dnorm = upload(norm),
               dtok = upload(tokens), dpicks = upload(picks);
  const size_t parts = (n + 15) / 16;
  auto run = [&](bool from_table, bool normed_out) {
    // The reference: y starts as the gathered rows (each row's token: a pick for the fed rows).
    std::vector<float> y0(size_t(rows) * n);
    for (int r = 0; r < rows; ++r) {
      const int t = r < feed_n ? picks[size_t(r)] : tokens[size_t(r)];
      std::copy(table.begin() + size_t(t) * n, table.begin() + size_t(t + 1) * n, y0.begin() + size_t(r) * n);
    }
    DeviceBuffer y = from_table ? DeviceBuffer(y0.size() * 4, "y") : upload(y0);
    if (from_table) REQUIRE(cudaMemset(y.get(), 0xff, y0.size() * 4) == cudaSuccess);
    DeviceBuffer ss(size_t(rows) * parts * 4, "ss"), xn(y0.size() * 4, "xn"), kept(size_t(feed_n) * 4, "kept"),
        q(size_t(rows) * nq * 4, "q"), xo(y0.size() * 4, "normed rows");
    REQUIRE(cudaMemset(kept.get(), 0xff, size_t(feed_n) * 4) == cudaSuccess);
    MatvecFold res;
    res.ss_out = ss.get<float>();
    res.next_norm = dnorm.get<float>();
    res.xn_out = xn.get<float>();
    if (from_table) {
      res.res_table = dtable.get<float>();
      res.res_tokens = dtok.get<int>();
      res.res_feed = EmbedFeed{dpicks.get<int>(), feed_n, kept.get<int>()};
    }
    launch_matvec(dw.get(), WType::BF16, n, k, dx.get<float>(), rows, y.get<float>(), st, res);
    MatvecFold nrm;
    nrm.ss_in = ss.get<float>();
    nrm.eps = eps;
    if (normed_out) nrm.x_normed_out = xo.get<float>();
    launch_matvec(dwq.get(), WType::BF16, nq, n, xn.get<float>(), rows, q.get<float>(), st, nrm);
    REQUIRE(cudaStreamSynchronize(st) == cudaSuccess);
    std::vector<int> kept_h(feed_n);
    REQUIRE(cudaMemcpy(kept_h.data(), kept.get(), size_t(feed_n) * 4, cudaMemcpyDeviceToHost) == cudaSuccess);
    if (from_table) CHECK(kept_h == picks);  // the fed rows' tokens kept for the host
    struct Out {
      std::vector<float> y, ss, xn, q, xo;
    };
    return Out{download(y, y0.size()), download(ss, size_t(rows) * parts), download(xn, y0.size()),
               download(q, size_t(rows) * nq), normed_out ? download(xo, y0.size()) : std::vector<float>{}};
  };
  const auto want = run(false, false), got = run(true, true);
  // The same epilogue on the same old values: the same bits, and the normed output leaves q as it was.
  REQUIRE(std::memcmp(got.y.data(), want.y.data(), want.y.size() * 4) == 0);
  REQUIRE(std::memcmp(got.ss.data(), want.ss.data(), want.ss.size() * 4) == 0);
  REQUIRE(std::memcmp(got.xn.data(), want.xn.data(), want.xn.size() * 4) == 0);
  REQUIRE(std::memcmp(got.q.data(), want.q.data(), want.q.size() * 4) == 0);
  // The normed rows: norm * y / rms(y), each row's.
  for (int r = 0; r < rows; ++r) {
    double sq = 0.0;
    for (int j = 0; j < n; ++j) sq += double(want.y[size_t(r) * n + j]) * want.y[size_t(r) * n + j];
    const double inv = 1.0 / std::sqrt(sq / n + eps);
    for (int j = 0; j < n; ++j) {
      INFO("row " << r << " element " << j);
      const double expect = norm[size_t(j)] * want.y[size_t(r) * n + j] * inv;
      REQUIRE(got.xo[size_t(r) * n + j] == Approx(expect).epsilon(1e-5).margin(1e-6));
    }
  }
  cudaStreamDestroy(st);
}

namespace {

// What a bit comparison of a fused RoPE step against launch_qkv_rope needs: a cos/sin table of 64 positions
// (any values serve), 3 slots of 4 blocks of 16 cells in a shuffled pool of 12, each row at its own slot and
// position, the bias and q/k norm weights, and two pairs of K/V arenas filled with the same random bytes (the
// reference's and the fused step's).
struct RopeCheck {
  int heads, kv_heads, hd, rows;
  KvType kv_type;
  static constexpr int kBlock = 16, kPerSlot = 4, kPool = 12;
  size_t arena_bytes = 0;
  std::vector<unsigned char> fill;
  DeviceBuffer dcos, dsin, dtable, dpos, dslot, dbias, dqn, dkn, k_ref, v_ref, k_got, v_got;

  RopeCheck(int heads_, int kv_heads_, int hd_, int rows_, KvType kv_type_, std::mt19937& rng)
      : heads(heads_), kv_heads(kv_heads_), hd(hd_), rows(rows_), kv_type(kv_type_) {
    std::normal_distribution<float> nd(0.0f, 1.0f);
    const int half = hd / 2, max_pos = kBlock * kPerSlot, n = (heads + 2 * kv_heads) * hd;
    std::vector<float> cs(size_t(max_pos) * half), sn(cs.size()), bias(n), qn(hd), kn(hd);
    for (size_t i = 0; i < cs.size(); ++i) cs[i] = std::cos(0.37f * float(i)), sn[i] = std::sin(0.37f * float(i));
    for (float& v : bias) v = nd(rng);
    for (float& v : qn) v = 1.0f + 0.2f * nd(rng);
    for (float& v : kn) v = 1.0f + 0.2f * nd(rng);
    std::vector<int32_t> table(size_t(3) * kPerSlot);
    for (int i = 0; i < kPool; ++i) table[size_t(i)] = (i * 7) % kPool;
    std::vector<int> pos(rows), slot(rows);
    for (int r = 0; r < rows; ++r) slot[size_t(r)] = r % 3, pos[size_t(r)] = int(rng() % max_pos);
    arena_bytes = size_t(kPool) * kBlock * kv_heads * hd * (kv_type == KvType::BF16 ? 2 : 4);
    fill.resize(arena_bytes);
    for (auto& b : fill) b = static_cast<unsigned char>(rng());
    dcos = upload(cs), dsin = upload(sn), dtable = upload(table), dpos = upload(pos), dslot = upload(slot);
    dbias = upload(bias), dqn = upload(qn), dkn = upload(kn);
    k_ref = upload(fill), v_ref = upload(fill), k_got = upload(fill), v_got = upload(fill);
  }

  // The step's parameters, writing into the reference's arenas (ref) or the fused step's.
  QkvRopeParams params(bool ref, bool with_bias, bool qk_norm) {
    QkvRopeParams qp;
    qp.n_heads = heads;
    qp.n_kv_heads = kv_heads;
    qp.head_dim = hd;
    qp.bias = with_bias ? dbias.get<float>() : nullptr;
    qp.q_norm = qk_norm ? dqn.get<float>() : nullptr;
    qp.k_norm = qk_norm ? dkn.get<float>() : nullptr;
    qp.cos = dcos.get<float>();
    qp.sin = dsin.get<float>();
    qp.pos = dpos.get<int>();
    qp.slot = dslot.get<int>();
    qp.kv.k = (ref ? k_ref : k_got).get();
    qp.kv.v = (ref ? v_ref : v_got).get();
    qp.kv.type = kv_type;
    qp.kv.block_table = dtable.get<int32_t>();
    qp.kv.table_stride = kPerSlot;
    qp.kv.block_size = kBlock;
    qp.kv.kv_dim = kv_heads * hd;
    return qp;
  }

  // The fused step run(early) with its lookups before the wait (true) and after it (false), each on fresh q
  // rows and arenas, compared with the reference to the bit.
  template <class Run>
  void compare_lookups(const DeviceBuffer& q_ref, DeviceBuffer& q_got, int stride, cudaStream_t st, Run run) {
    for (const bool early : {true, false}) {
      INFO("lookups before the wait " << early);
      REQUIRE(cudaMemset(q_got.get(), 0xff, size_t(rows) * stride * 4) == cudaSuccess);
      REQUIRE(cudaMemcpy(k_got.get(), fill.data(), arena_bytes, cudaMemcpyHostToDevice) == cudaSuccess);
      REQUIRE(cudaMemcpy(v_got.get(), fill.data(), arena_bytes, cudaMemcpyHostToDevice) == cudaSuccess);
      run(early);
      REQUIRE(cudaStreamSynchronize(st) == cudaSuccess);
      compare(q_ref, q_got, stride);
    }
  }

  // The q values of each row (rows of `stride` floats; k and v went to the arenas) and both arenas, to the bit.
  void compare(const DeviceBuffer& q_ref, const DeviceBuffer& q_got, int stride) const {
    const std::vector<float> a = download(q_ref, size_t(rows) * stride), b = download(q_got, a.size());
    for (int r = 0; r < rows; ++r)
      CHECK(std::memcmp(&a[size_t(r) * stride], &b[size_t(r) * stride], size_t(heads) * hd * 4) == 0);
    auto bytes = [&](const DeviceBuffer& d) {
      std::vector<unsigned char> h(arena_bytes);
      REQUIRE(cudaMemcpy(h.data(), d.get(), arena_bytes, cudaMemcpyDeviceToHost) == cudaSuccess);
      return h;
    };
    const std::vector<unsigned char> kr = bytes(k_ref), kg = bytes(k_got), vr = bytes(v_ref), vg = bytes(v_got);
    CHECK(kr != fill);  // the step wrote something
    CHECK(kr == kg);
    CHECK(vr == vg);
  }
};

}  // namespace

TEST_CASE("the fused GEMV's RoPE epilogue gives the bits of the Store epilogue followed by the RoPE step") {
  REQUIRE(CudaBackend::device_count() > 0);
  cudaStream_t st = nullptr;
  REQUIRE(cudaStreamCreate(&st) == cudaSuccess);
  configure_gemv();
  std::mt19937 rng(31);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  struct Shape {
    int heads, kv_heads, hd, k, rows;
    bool norm, bias;
    KvType kv_type;
  };
  // GQA 4:1 at head_dim 64 on a bf16 arena, one and three rows (a row group of several rows); 1:1 at 128
  // with a bias (Qwen2) on an fp32 arena; an inner dimension that ends inside a chunk; more pairs a warp than
  // the epilogue looks up before the wait (64 / 16 heads of 128).
  const std::vector<Shape> shapes = {
      {8, 2, 64, 520, 1, true, false, KvType::BF16}, {8, 2, 64, 520, 3, true, false, KvType::BF16},
      {4, 4, 128, 256, 2, true, true, KvType::F32},  {4, 1, 64, 1032, 1, false, true, KvType::BF16},
      {64, 16, 128, 264, 1, true, false, KvType::BF16},
  };
  for (const Shape& sh : shapes) {
    INFO("heads " << sh.heads << "/" << sh.kv_heads << " hd " << sh.hd << " k " << sh.k << " rows " << sh.rows
                  << " bias " << sh.bias << " bf16 arena " << (sh.kv_type == KvType::BF16));
    const int qkv_rows = (sh.heads + 2 * sh.kv_heads) * sh.hd;
    REQUIRE(gemv_supports(sh.k));
    std::vector<uint16_t> wb(size_t(qkv_rows) * sh.k);
    for (auto& v : wb) v = bf16_rn(nd(rng) * 0.05f);
    std::vector<float> x(size_t(sh.rows) * sh.k), nw(sh.k);
    for (float& v : x) v = nd(rng) * 3.0f;
    for (float& v : nw) v = 1.0f + 0.2f * nd(rng);
    RopeCheck rc(sh.heads, sh.kv_heads, sh.hd, sh.rows, sh.kv_type, rng);
    DeviceBuffer dw = upload(wb), dx = upload(x), dn = upload(nw);
    DeviceBuffer q_ref(size_t(sh.rows) * qkv_rows * 4, "qkv ref"), q_got(size_t(sh.rows) * qkv_rows * 4, "qkv got");
    GemvParams g;
    g.w = dw.get();
    g.k = sh.k;
    g.x = dx.get<float>();
    g.rows = sh.rows;
    g.norm = sh.norm ? dn.get<float>() : nullptr;
    g.eps = 1e-5f;
    // The reference: the Store epilogue, then the RoPE step on its rows.
    g.n = qkv_rows;
    g.ep = GemvEpilogue::Store;
    g.y = q_ref.get<float>();
    launch_gemv(g, st);
    launch_qkv_rope(q_ref.get<float>(), sh.rows, rc.params(true, sh.bias, false), st);
    // The fused step: pairs of rows, q into y, k and v into the arena; its lookups before the wait and after.
    g.n = qkv_rows / 2;
    g.ep = GemvEpilogue::Rope;
    g.y = q_got.get<float>();
    g.rope = rc.params(false, sh.bias, false);
    rc.compare_lookups(q_ref, q_got, qkv_rows, st, [&](bool early) {
      g.rope_early = early;
      launch_gemv(g, st);
    });
  }
  // Refused: q/k norms, and an n that is not half the q | k | v rows.
  GemvParams bad;
  bad.w = nullptr;
  bad.k = 256;
  bad.rows = 1;
  bad.ep = GemvEpilogue::Rope;
  bad.rope.n_heads = 2;
  bad.rope.n_kv_heads = 1;
  bad.rope.head_dim = 64;
  bad.n = 100;
  CHECK_THROWS_AS(launch_gemv(bad, st), Error);
  bad.n = 128;
  std::vector<float> qn(64, 1.0f);
  DeviceBuffer dqn = upload(qn);
  bad.rope.q_norm = dqn.get<float>();
  CHECK_THROWS_AS(launch_gemv(bad, st), Error);
  cudaStreamDestroy(st);
}

TEST_CASE("the fused GEMV's per-block picks give launch_argmax's picks over the logits it wrote, ties included") {
  REQUIRE(CudaBackend::device_count() > 0);
  cudaStream_t st = nullptr;
  REQUIRE(cudaStreamCreate(&st) == cudaSuccess);
  configure_gemv();
  std::mt19937 rng(47);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  struct Shape {
    int n, k, rows;
  };
  // A vocabulary of outputs over every SM, one spread over few, and a window of three output rows.
  for (const Shape& sh : std::vector<Shape>{{5000, 264, 1}, {50021, 512, 1}, {40, 1024, 1}, {7000, 520, 3}}) {
    INFO("n " << sh.n << " k " << sh.k << " rows " << sh.rows);
    std::vector<uint16_t> wb(size_t(sh.n) * sh.k);
    for (auto& v : wb) v = bf16_rn(nd(rng) * 0.05f);
    // Ties: the same large weight row at three outputs far apart (in different blocks where there are
    // several), so each row's maximum is tied three ways and the lowest of the three ids must win.
    const int a = sh.n / 3 + 1, b = sh.n - 1, c = sh.n / 7;
    for (int i = 0; i < sh.k; ++i) {
      const uint16_t v = bf16_rn(std::fabs(nd(rng)) + 1.0f);
      wb[size_t(a) * sh.k + i] = wb[size_t(b) * sh.k + i] = wb[size_t(c) * sh.k + i] = v;
    }
    std::vector<float> x(size_t(sh.rows) * sh.k), nw(sh.k);
    for (float& v : x) v = std::fabs(nd(rng));
    for (float& v : nw) v = 1.0f + 0.02f * nd(rng);
    std::vector<int> x_rows(sh.rows);
    for (int r = 0; r < sh.rows; ++r) x_rows[size_t(r)] = (r + 1) % sh.rows;
    DeviceBuffer dw = upload(wb), dx = upload(x), dn = upload(nw), dxr = upload(x_rows);
    DeviceBuffer y(size_t(sh.rows) * sh.n * 4, "logits"), pv(size_t(sh.rows) * 1024 * 4, "pick values"),
        pi(size_t(sh.rows) * 1024 * 4, "pick ids");
    Dev<int> from_parts(sh.rows), from_logits(sh.rows);
    GemvParams g;
    g.w = dw.get();
    g.n = sh.n;
    g.k = sh.k;
    g.x = dx.get<float>();
    g.rows = sh.rows;
    g.x_rows = dxr.get<int>();
    g.norm = dn.get<float>();
    g.eps = 1e-5f;
    g.ep = GemvEpilogue::Store;
    g.y = y.get<float>();
    g.pick_value = pv.get<float>();
    g.pick_index = pi.get<int>();
    const int parts = gemv_blocks(g);
    REQUIRE(parts >= 1);
    REQUIRE(parts <= 1024);
    launch_gemv(g, st);
    launch_argmax_parts(pv.get<float>(), pi.get<int>(), parts, sh.rows, from_parts.p, st);
    launch_argmax(y.get<float>(), sh.rows, sh.n, from_logits.p, st);
    REQUIRE(cudaStreamSynchronize(st) == cudaSuccess);
    const std::vector<int> p1 = from_parts.get(), p2 = from_logits.get();
    CHECK(p1 == p2);
    for (int r = 0; r < sh.rows; ++r) CHECK(p1[size_t(r)] == std::min({a, b, c}));
  }
  GemvParams bad;
  bad.k = 256;
  bad.n = 8;
  bad.ep = GemvEpilogue::Residual;
  float* fake = reinterpret_cast<float*>(16);
  bad.pick_value = fake;
  bad.pick_index = reinterpret_cast<int*>(16);
  CHECK_THROWS_AS(launch_gemv(bad, st), Error);
  cudaStreamDestroy(st);
}

TEST_CASE("the skinny kernel's QKV projection with the RoPE step gives the bits of matvec then the RoPE step") {
  REQUIRE(CudaBackend::device_count() > 0);
  cudaStream_t st = nullptr;
  REQUIRE(cudaStreamCreate(&st) == cudaSuccess);
  configure_matvec();
  std::mt19937 rng(41);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  struct Shape {
    int heads, kv_heads, hd, k, rows;
    bool qk_norm, bias, folded;
    KvType kv_type;
  };
  // strata-tiny-draft's heads (6 / 2 at 64, q/k norms) at one and five rows, with the folded input norm; 16
  // rows (two row tiles); head_dim 128 with a bias on an fp32 arena; an inner dimension that ends inside a chunk.
  const std::vector<Shape> shapes = {
      {6, 2, 64, 384, 1, true, false, true, KvType::BF16},  {6, 2, 64, 384, 5, true, false, true, KvType::BF16},
      {8, 4, 64, 512, 16, true, false, false, KvType::BF16}, {4, 2, 128, 256, 3, false, true, true, KvType::F32},
      {2, 1, 64, 1032, 2, false, false, false, KvType::BF16},
  };
  for (const Shape& sh : shapes) {
    INFO("heads " << sh.heads << "/" << sh.kv_heads << " hd " << sh.hd << " k " << sh.k << " rows " << sh.rows
                  << " q/k norm " << sh.qk_norm << " bias " << sh.bias << " folded " << sh.folded);
    const int n = (sh.heads + 2 * sh.kv_heads) * sh.hd;
    REQUIRE(matvec_qkv_rope_supports(WType::BF16, n, sh.hd));
    std::vector<uint16_t> wb(size_t(n) * sh.k);
    for (auto& v : wb) v = bf16_rn(nd(rng) * 0.05f);
    const int parts = (sh.k + 15) / 16;
    std::vector<float> x(size_t(sh.rows) * sh.k), ss(size_t(sh.rows) * parts);
    for (float& v : x) v = nd(rng) * 3.0f;
    for (float& v : ss) v = 1.0f + std::fabs(nd(rng));  // any positive partial sums serve a bit comparison
    RopeCheck rc(sh.heads, sh.kv_heads, sh.hd, sh.rows, sh.kv_type, rng);
    DeviceBuffer dw = upload(wb), dx = upload(x), dss = upload(ss);
    DeviceBuffer q_ref(size_t(sh.rows) * n * 4, "qkv ref"), q_got(size_t(sh.rows) * n * 4, "qkv got");
    MatvecFold f;
    if (sh.folded) f.ss_in = dss.get<float>(), f.eps = 1e-6f;
    launch_matvec(dw.get(), WType::BF16, n, sh.k, dx.get<float>(), sh.rows, q_ref.get<float>(), st, f);
    launch_qkv_rope(q_ref.get<float>(), sh.rows, rc.params(true, sh.bias, sh.qk_norm), st);
    rc.compare_lookups(q_ref, q_got, n, st, [&](bool early) {
      f.rope_early = early;
      launch_matvec_qkv_rope(dw.get(), WType::BF16, n, sh.k, dx.get<float>(), sh.rows, q_got.get<float>(),
                             rc.params(false, sh.bias, sh.qk_norm), st, f);
    });
  }
  // Refused, naming the problem: a head_dim without a block form, rows that are not q | k | v, a remainder.
  QkvRopeParams bad;
  bad.n_heads = 2;
  bad.n_kv_heads = 1;
  bad.head_dim = 96;
  CHECK_FALSE(matvec_qkv_rope_supports(WType::BF16, 384, 96));
  CHECK_FALSE(matvec_qkv_rope_supports(WType::F32, 256, 64));
  CHECK_THROWS_AS(launch_matvec_qkv_rope(nullptr, WType::BF16, 384, 256, nullptr, 1, nullptr, bad, st), Error);
  bad.head_dim = 64;
  CHECK_THROWS_AS(launch_matvec_qkv_rope(nullptr, WType::BF16, 320, 256, nullptr, 1, nullptr, bad, st), Error);
  bad.qkv_rem = reinterpret_cast<const float*>(16);
  CHECK_THROWS_AS(launch_matvec_qkv_rope(nullptr, WType::BF16, 256, 256, nullptr, 1, nullptr, bad, st), Error);
  cudaStreamDestroy(st);
}

TEST_CASE("the embedding's folded norm input and the skinny kernel's gathered rows give the separate steps' bits") {
  REQUIRE(CudaBackend::device_count() > 0);
  cudaStream_t st = nullptr;
  REQUIRE(cudaStreamCreate(&st) == cudaSuccess);
  std::mt19937 rng(43);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  const int hidden = 400, vocab = 50, rows = 6, parts = hidden / 16;
  std::vector<uint16_t> tb(size_t(vocab) * hidden);
  for (auto& v : tb) v = bf16_rn(nd(rng));
  std::vector<float> norm(hidden);
  for (float& v : norm) v = 1.0f + 0.2f * nd(rng);
  const std::vector<int> tokens = {7, 0, 49, 7, 23, 11};
  DeviceBuffer dt = upload(tb), dn = upload(norm), dtok = upload(tokens);
  DeviceBuffer x(size_t(rows) * hidden * 4, "x"), xn(size_t(rows) * hidden * 4, "xn"), ss(size_t(rows) * parts * 4, "ss");
  DeviceBuffer x_plain(size_t(rows) * hidden * 4, "x plain");
  launch_embedding(dt.get(), WType::BF16, hidden, dtok.get<int>(), rows, x.get<float>(), st, dn.get<float>(),
                   xn.get<float>(), ss.get<float>());
  launch_embedding(dt.get(), WType::BF16, hidden, dtok.get<int>(), rows, x_plain.get<float>(), st);
  REQUIRE(cudaStreamSynchronize(st) == cudaSuccess);
  const std::vector<float> gx = download(x, size_t(rows) * hidden), gp = download(x_plain, gx.size()),
                           gxn = download(xn, gx.size()), gss = download(ss, size_t(rows) * parts);
  CHECK(std::memcmp(gx.data(), gp.data(), gx.size() * 4) == 0);
  auto widen = [](uint16_t b) {
    const uint32_t u = uint32_t(b) << 16;
    float f;
    std::memcpy(&f, &u, 4);
    return f;
  };
  int bad_x = 0, bad_xn = 0, bad_ss = 0;
  for (int r = 0; r < rows; ++r) {
    for (int i = 0; i < hidden; ++i) {
      const float v = widen(tb[size_t(tokens[size_t(r)]) * hidden + i]);
      bad_x += gx[size_t(r) * hidden + i] != v;
      bad_xn += gxn[size_t(r) * hidden + i] != norm[size_t(i)] * v;
    }
    for (int p = 0; p < parts; ++p) {  // each half's squares fused in element order, then the halves added
      float h[2] = {0.0f, 0.0f};
      for (int e = 0; e < 16; ++e) {
        const float v = widen(tb[size_t(tokens[size_t(r)]) * hidden + 16 * p + e]);
        h[e / 8] = std::fma(v, v, h[e / 8]);
      }
      bad_ss += gss[size_t(r) * parts + p] != h[0] + h[1];
    }
  }
  CHECK(bad_x == 0);
  CHECK(bad_xn == 0);
  CHECK(bad_ss == 0);

  // Gathered rows: the skinny matmul of rows x_rows[r] (with their folded norm) equals the matmul of those
  // rows copied out first.
  const int n = 72;
  std::vector<uint16_t> wb(size_t(n) * hidden);
  for (auto& v : wb) v = bf16_rn(nd(rng) * 0.1f);
  DeviceBuffer dw = upload(wb);
  const std::vector<int> pick = {5, 2, 2, 0};
  const int R = int(pick.size());
  std::vector<float> hx(size_t(R) * hidden), hss(size_t(R) * parts);
  for (int r = 0; r < R; ++r) {
    std::copy_n(&gxn[size_t(pick[size_t(r)]) * hidden], hidden, &hx[size_t(r) * hidden]);
    std::copy_n(&gss[size_t(pick[size_t(r)]) * parts], parts, &hss[size_t(r) * parts]);
  }
  DeviceBuffer dpick = upload(pick), dhx = upload(hx), dhss = upload(hss);
  DeviceBuffer y_ref(size_t(R) * n * 4, "y ref"), y_got(size_t(R) * n * 4, "y got");
  MatvecFold f;
  f.eps = 1e-6f;
  f.ss_in = dhss.get<float>();
  launch_matvec(dw.get(), WType::BF16, n, hidden, dhx.get<float>(), R, y_ref.get<float>(), st, f);
  f.ss_in = ss.get<float>();
  f.x_rows = dpick.get<int>();
  launch_matvec(dw.get(), WType::BF16, n, hidden, xn.get<float>(), R, y_got.get<float>(), st, f);
  REQUIRE(cudaStreamSynchronize(st) == cudaSuccess);
  const std::vector<float> ya = download(y_ref, size_t(R) * n), yb = download(y_got, ya.size());
  CHECK(std::memcmp(ya.data(), yb.data(), ya.size() * 4) == 0);
  // Refused: gathered rows on fp32 weights; a folded embedding norm of a width that is not a multiple of 16.
  CHECK_THROWS_AS(launch_matvec(dw.get(), WType::F32, n, hidden, xn.get<float>(), R, y_got.get<float>(), st, f), Error);
  CHECK_THROWS_AS(launch_embedding(dt.get(), WType::BF16, 392, dtok.get<int>(), 1, x.get<float>(), st, dn.get<float>(),
                                   xn.get<float>(), ss.get<float>()),
                  Error);
  cudaStreamDestroy(st);
}
