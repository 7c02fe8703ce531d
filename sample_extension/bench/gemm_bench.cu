// Benchmark of gemm_kernels: C = A * B for random M x K and K x N matrices.
//
//   gemm_bench [--m 2048] [--n 2048] [--k 2048] [--warmup 3] [--repeats 20] [--seed 1]
//
// Prints CIQ_CHECK (against a double-precision CPU reference on sampled
// entries, after checking that every entry of the NaN-poisoned output was
// written) and CIQ_METRIC time_ms / gflops.

#include <cmath>
#include <cstdio>
#include <vector>

#include "bench_common.h"
#include "gemm.h"

int main(int argc, char** argv) {
    const bench::Options options{argc, argv};
    options.only({"--m", "--n", "--k", "--warmup", "--repeats", "--seed"});
    const int m = static_cast<int>(options.get("--m", 2048));
    const int n = static_cast<int>(options.get("--n", 2048));
    const int k = static_cast<int>(options.get("--k", 2048));
    const int warmup = static_cast<int>(options.get("--warmup", 3));
    const int repeats = static_cast<int>(options.get("--repeats", 20));
    const unsigned long long seed = static_cast<unsigned long long>(options.get("--seed", 1));

    bench::require_gpu();
    const CiqGemmConfig config = ciq_gemm_config();
    std::fprintf(stderr, "gemm %dx%dx%d, tile %dx%dx%d, micro-tile %dx%d, %d threads\n", m, n, k,
                 config.bm, config.bn, config.bk, config.tm, config.tn, config.threads);

    std::vector<float> a(static_cast<size_t>(m) * k), b(static_cast<size_t>(k) * n),
        c(static_cast<size_t>(m) * n);
    bench::fill_random(a, seed, -1.0f, 1.0f);
    bench::fill_random(b, seed + 1, -1.0f, 1.0f);

    float *da, *db, *dc;
    bench::check(cudaMalloc(&da, sizeof(float) * a.size()), "cudaMalloc(A)");
    bench::check(cudaMalloc(&db, sizeof(float) * b.size()), "cudaMalloc(B)");
    bench::check(cudaMalloc(&dc, sizeof(float) * c.size()), "cudaMalloc(C)");
    bench::check(cudaMemcpy(da, a.data(), sizeof(float) * a.size(), cudaMemcpyHostToDevice), "copy A");
    bench::check(cudaMemcpy(db, b.data(), sizeof(float) * b.size(), cudaMemcpyHostToDevice), "copy B");
    // All-ones bytes are NaN: an entry the kernel forgets to write fails the check.
    bench::check(cudaMemset(dc, 0xff, sizeof(float) * c.size()), "poison C");

    auto launch = [&] { return ciq_sgemm(m, n, k, 1.0f, da, db, 0.0f, dc, 0); };
    bench::check(launch(), "sgemm");
    bench::check(cudaDeviceSynchronize(), "sgemm");
    bench::check(cudaMemcpy(c.data(), dc, sizeof(float) * c.size(), cudaMemcpyDeviceToHost), "copy C");

    bool pass = true;
    size_t unwritten = 0;
    for (float x : c) unwritten += std::isfinite(x) ? 0 : 1;
    if (unwritten) {
        std::fprintf(stderr, "%zu entries of C are not finite (unwritten or wrong)\n", unwritten);
        pass = false;
    }
    // Sampled entries (always including the corners, where edge handling
    // fails first) against a double-precision reference; error relative to
    // sum |a_ik * b_kj|, the scale of the rounding error.
    double worst = 0.0;
    const int samples = 512;
    unsigned long long s = seed ^ 0x9e3779b97f4a7c15ull;
    for (int t = 0; t < samples; ++t) {
        int i, j;
        if (t < 4) {
            i = (t & 1) ? m - 1 : 0;
            j = (t & 2) ? n - 1 : 0;
        } else {
            s = s * 6364136223846793005ull + 1442695040888963407ull;
            i = static_cast<int>((s >> 33) % m);
            j = static_cast<int>((s >> 13) % n);
        }
        double ref = 0.0, scale = 0.0;
        for (int p = 0; p < k; ++p) {
            const double prod = static_cast<double>(a[static_cast<size_t>(i) * k + p]) *
                                b[static_cast<size_t>(p) * n + j];
            ref += prod;
            scale += std::fabs(prod);
        }
        const double err = std::fabs(c[static_cast<size_t>(i) * n + j] - ref) / (scale + 1e-30);
        worst = std::fmax(worst, std::isfinite(err) ? err : INFINITY);
    }
    if (!(worst <= 1e-5)) {
        std::fprintf(stderr, "worst relative error %.3g exceeds 1e-5\n", worst);
        pass = false;
    }
    std::printf("CIQ_METRIC max_rel_error=%.3g\n", worst);
    std::printf("CIQ_CHECK %s\n", pass ? "PASS" : "FAIL");
    if (!pass) return 1;

    const double ms = bench::median_ms(launch, warmup, repeats);
    std::printf("CIQ_METRIC time_ms=%.6f\n", ms);
    std::printf("CIQ_METRIC gflops=%.2f\n", 2.0 * m * n * k / (ms * 1e6));

    bench::check(cudaFree(da), "cudaFree(A)");
    bench::check(cudaFree(db), "cudaFree(B)");
    bench::check(cudaFree(dc), "cudaFree(C)");
    return 0;
}
