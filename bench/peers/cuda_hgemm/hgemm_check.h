// What the HGEMM benchmarks share: random half inputs, a NaN-poisoned output, and the check of C = A * B^T
// on 1024 sampled entries against a double product on the CPU. Half accumulation over K terms (upstream's
// kernels and cuBLAS with CUBLAS_COMPUTE_16F) rounds at every step: the sampled entries' relative error
// norm must stay under 2e-2 (a wrong index or an unwritten tile is of order 1), and no entry is NaN.
#pragma once

#include <cuda_fp16.h>

#include <cmath>
#include <cstdio>
#include <vector>

#include "bench_common.h"

namespace hgemm_check {

inline std::vector<half> random_half(size_t count, unsigned long long seed) {
    std::vector<float> values(count);
    bench::fill_random(values, seed, -1.0f, 1.0f);
    std::vector<half> out(count);
    for (size_t i = 0; i < count; ++i) out[i] = __float2half(values[i]);
    return out;
}

// 0 when C (copied back) is A * B^T on the samples, else 1 (after printing CIQ_CHECK FAIL).
inline int check(const std::vector<half>& A, const std::vector<half>& B, const std::vector<half>& C, size_t M,
                 size_t N, size_t K) {
    double err2 = 0.0, ref2 = 0.0;
    int nan = 0;
    unsigned long long s = 12345;
    for (int sample = 0; sample < 1024; ++sample) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        const size_t i = (s >> 33) % M, j = (s >> 13) % N;
        double ref = 0.0;
        for (size_t k = 0; k < K; ++k) ref += double(__half2float(A[i * K + k])) * __half2float(B[j * K + k]);
        const double got = __half2float(C[i * N + j]);
        if (std::isnan(got)) ++nan;
        err2 += (got - ref) * (got - ref);
        ref2 += ref * ref;
    }
    const double rel = std::sqrt(err2 / ref2);
    if (nan || !(rel < 2e-2)) {
        std::printf("relative error %.3g on 1024 sampled entries, %d NaN\nCIQ_CHECK FAIL\n", rel, nan);
        return 1;
    }
    std::printf("relative error %.3g on 1024 sampled entries\nCIQ_CHECK PASS\n", rel);
    return 0;
}

}  // namespace hgemm_check
