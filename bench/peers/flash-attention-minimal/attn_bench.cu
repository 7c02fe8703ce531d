// Benchmark of upstream's fused attention forward kernel (issue 24). Upstream's bench.py times it
// from PyTorch against a manual attention; here one size, its own output line (read by ciq_build
// with METRIC, CMakeLists.txt):
//   attention forward: B=16 nh=16 N=512 d=64 Bc=32: 12.345678 ms, 1393.2 GFLOP/s
// (the median of --repeats launches, each timed alone; O, l, m are reset before each, as upstream's
// forward() allocates them, outside the timed region). The check: 64 sampled rows of O against a
// double CPU softmax(Q K^T / sqrt(d)) V; a wrong result prints CIQ_CHECK FAIL and exits 1.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <vector>

#include "attn_launch.h"
#include "bench_common.h"

__global__ void fill(float* x, size_t n, float v) {
    const size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
    if (i < n) x[i] = v;
}

int main(int argc, char** argv) {
    const bench::Options opts{argc, argv};
    opts.only({"--batch", "--heads", "--seq", "--repeats"});
    const int B = static_cast<int>(opts.get("--batch", 16));
    const int nh = static_cast<int>(opts.get("--heads", 16));
    const int N = static_cast<int>(opts.get("--seq", 512));
    const int d = 64;  // the head size upstream's bench.py uses
    const int repeats = static_cast<int>(opts.get("--repeats", 10));
    if (N % attn_tile() != 0) {
        std::fprintf(stderr, "--seq must be a multiple of the tile (%d): upstream's kernel has no edge handling\n",
                     attn_tile());
        return 64;
    }
    bench::require_gpu();
    const size_t count = static_cast<size_t>(B) * nh * N * d, rows = static_cast<size_t>(B) * nh * N;
    std::vector<float> Q(count), K(count), V(count);
    bench::fill_random(Q, 1, -1.0f, 1.0f);
    bench::fill_random(K, 2, -1.0f, 1.0f);
    bench::fill_random(V, 3, -1.0f, 1.0f);
    float *dQ, *dK, *dV, *dO, *dl, *dm;
    for (float** p : {&dQ, &dK, &dV, &dO}) bench::check(cudaMalloc(p, count * sizeof(float)), "cudaMalloc");
    for (float** p : {&dl, &dm}) bench::check(cudaMalloc(p, rows * sizeof(float)), "cudaMalloc");
    bench::check(cudaMemcpy(dQ, Q.data(), count * sizeof(float), cudaMemcpyHostToDevice), "copy Q");
    bench::check(cudaMemcpy(dK, K.data(), count * sizeof(float), cudaMemcpyHostToDevice), "copy K");
    bench::check(cudaMemcpy(dV, V.data(), count * sizeof(float), cudaMemcpyHostToDevice), "copy V");
    auto reset = [&] {
        bench::check(cudaMemsetAsync(dO, 0, count * sizeof(float)), "reset O");
        bench::check(cudaMemsetAsync(dl, 0, rows * sizeof(float)), "reset l");
        fill<<<static_cast<unsigned>((rows + 255) / 256), 256>>>(dm, rows, -std::numeric_limits<float>::infinity());
        bench::check(cudaGetLastError(), "reset m");
    };

    // The checked launch.
    reset();
    bench::check(static_cast<cudaError_t>(attn_forward(dQ, dK, dV, B, nh, N, d, dl, dm, dO)), "launch");
    std::vector<float> O(count);
    bench::check(cudaMemcpy(O.data(), dO, count * sizeof(float), cudaMemcpyDeviceToHost), "copy O back");
    int bad = 0;
    unsigned long long s = 777;
    std::vector<double> p(N);
    for (int sample = 0; sample < 64; ++sample) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        const size_t row = (s >> 20) % rows;            // (b, h, i) flattened
        const size_t head = row / N * N * d;             // start of this (b, h) in Q, K, V, O
        const float* q = &Q[row * d];
        double mx = -1e300, sum = 0.0;
        for (int j = 0; j < N; ++j) {
            double dot = 0.0;
            for (int x = 0; x < d; ++x) dot += static_cast<double>(q[x]) * K[head + static_cast<size_t>(j) * d + x];
            p[j] = dot / std::sqrt(static_cast<double>(d));
            mx = std::max(mx, p[j]);
        }
        for (int j = 0; j < N; ++j) sum += (p[j] = std::exp(p[j] - mx));
        for (int x = 0; x < d; ++x) {
            double ref = 0.0;
            for (int j = 0; j < N; ++j) ref += p[j] * V[head + static_cast<size_t>(j) * d + x];
            ref /= sum;
            const double got = O[row * d + x];
            if (!(std::fabs(got - ref) <= 1e-4 + 1e-3 * std::fabs(ref)) && ++bad <= 3)
                std::fprintf(stderr, "O[row %zu][%d] = %.7g, expected %.7g\n", row, x, got, ref);
        }
    }
    if (bad) {
        std::printf("CIQ_CHECK FAIL (%d of %d sampled outputs wrong)\n", bad, 64 * d);
        return 1;
    }
    std::printf("CIQ_CHECK PASS\n");

    cudaEvent_t beg, end;
    bench::check(cudaEventCreate(&beg), "cudaEventCreate");
    bench::check(cudaEventCreate(&end), "cudaEventCreate");
    std::vector<double> times;
    for (int r = 0; r < repeats + 1; ++r) {  // the first is a warm-up
        reset();
        bench::check(cudaEventRecord(beg), "cudaEventRecord");
        bench::check(static_cast<cudaError_t>(attn_forward(dQ, dK, dV, B, nh, N, d, dl, dm, dO)), "timed launch");
        bench::check(cudaEventRecord(end), "cudaEventRecord");
        bench::check(cudaEventSynchronize(end), "cudaEventSynchronize");
        float ms = 0.0f;
        bench::check(cudaEventElapsedTime(&ms, beg, end), "cudaEventElapsedTime");
        if (r > 0) times.push_back(ms);
    }
    std::sort(times.begin(), times.end());
    const double ms = times.size() % 2 ? times[times.size() / 2]
                                       : 0.5 * (times[times.size() / 2 - 1] + times[times.size() / 2]);
    const double flops = 4.0 * B * nh * static_cast<double>(N) * N * d;  // Q K^T and P V
    std::printf("attention forward: B=%d nh=%d N=%d d=%d Bc=%d: %.6f ms, %.1f GFLOP/s\n", B, nh, N, d, attn_tile(),
                ms, flops / (ms * 1e6));
    return 0;
}
