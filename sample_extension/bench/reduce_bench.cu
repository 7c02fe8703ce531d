// Benchmark of reduce_kernels: sum of N random floats.
//
//   reduce_bench [--n 67108864] [--warmup 5] [--repeats 50] [--seed 1]
//
// Prints CIQ_CHECK (against a double-precision CPU sum; the NaN-poisoned
// result must be overwritten) and CIQ_METRIC time_ms / gbps.

#include <cmath>
#include <cstdio>
#include <vector>

#include "bench_common.h"
#include "reduce.h"

int main(int argc, char** argv) {
    const bench::Options options{argc, argv};
    options.only({"--n", "--warmup", "--repeats", "--seed"});
    const size_t n = static_cast<size_t>(options.get("--n", 1ll << 26));
    const int warmup = static_cast<int>(options.get("--warmup", 5));
    const int repeats = static_cast<int>(options.get("--repeats", 50));
    const unsigned long long seed = static_cast<unsigned long long>(options.get("--seed", 1));

    const int sm_count = bench::require_gpu();
    const CiqReduceConfig config = ciq_reduce_config();
    std::fprintf(stderr, "reduce n=%zu, block %d, items %d\n", n, config.block, config.items);

    std::vector<float> x(n);
    bench::fill_random(x, seed, 0.0f, 1.0f);
    double ref = 0.0, scale = 0.0;
    for (float v : x) {
        ref += v;
        scale += std::fabs(v);
    }

    const size_t scratch_count = ciq_reduce_scratch(n, sm_count);
    float *dx, *scratch, *dresult;
    bench::check(cudaMalloc(&dx, sizeof(float) * n), "cudaMalloc(x)");
    bench::check(cudaMalloc(&scratch, sizeof(float) * scratch_count), "cudaMalloc(scratch)");
    bench::check(cudaMalloc(&dresult, sizeof(float)), "cudaMalloc(result)");
    bench::check(cudaMemcpy(dx, x.data(), sizeof(float) * n, cudaMemcpyHostToDevice), "copy x");
    bench::check(cudaMemset(scratch, 0xff, sizeof(float) * scratch_count), "poison scratch");
    bench::check(cudaMemset(dresult, 0xff, sizeof(float)), "poison result");

    auto launch = [&] { return ciq_reduce_sum(dx, n, scratch, dresult, sm_count, 0); };
    bench::check(launch(), "reduce");
    bench::check(cudaDeviceSynchronize(), "reduce");
    float result = NAN;
    bench::check(cudaMemcpy(&result, dresult, sizeof(float), cudaMemcpyDeviceToHost), "copy result");

    // float partial sums over ~n / (threads * items) terms each; 1e-5 of the
    // magnitude is far above their rounding error and far below any lost chunk.
    const double err = std::fabs(result - ref) / (scale + 1e-30);
    const bool pass = std::isfinite(result) && err <= 1e-5;
    if (!pass) std::fprintf(stderr, "sum %.9g, reference %.9g, relative error %.3g\n", result, ref, err);
    std::printf("CIQ_METRIC max_rel_error=%.3g\n", err);
    std::printf("CIQ_CHECK %s\n", pass ? "PASS" : "FAIL");
    if (!pass) return 1;

    const double ms = bench::median_ms(launch, warmup, repeats);
    std::printf("CIQ_METRIC time_ms=%.6f\n", ms);
    std::printf("CIQ_METRIC gbps=%.2f\n", sizeof(float) * static_cast<double>(n) / (ms * 1e6));

    bench::check(cudaFree(dx), "cudaFree(x)");
    bench::check(cudaFree(scratch), "cudaFree(scratch)");
    bench::check(cudaFree(dresult), "cudaFree(result)");
    return 0;
}
