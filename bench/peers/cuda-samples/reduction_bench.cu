// Benchmark of cuda-samples' reduction (kernel 7, float sum) as upstream's main times it: the mean
// of 100 whole reductions (first pass, then the partial sums on the GPU), printed in upstream's
// line, with the time given to 7 decimals instead of upstream's 5 (10 us steps are coarser than
// the differences a tune must see at these sizes; ciq_build reads it with METRIC):
//   Reduction, Throughput = %.4f GB/s, Time = %.7f s, Size = %u Elements, NumDevsUsed = 1, Workgroup = %u
// The check: the sum of n values in [-1, 1) against a double CPU sum within 1e-5 of the sum of
// magnitudes (upstream's float check is 1e-8 of the sum, with inputs of 0..255); a wrong sum prints
// CIQ_CHECK FAIL and exits 1.
#include <cmath>
#include <cstdio>
#include <vector>

#include "bench_common.h"
#include "reduction_launch.h"

int main(int argc, char** argv) {
    const bench::Options opts{argc, argv};
    opts.only({"--n", "--iterations"});
    const int n = static_cast<int>(opts.get("--n", 1 << 24));
    const int iterations = static_cast<int>(opts.get("--iterations", 100));
    bench::require_gpu();
    std::vector<float> h(n);
    bench::fill_random(h, 5, -1.0f, 1.0f);
    double ref = 0.0, mag = 0.0;
    for (float x : h) ref += x, mag += std::fabs(x);
    const int blocks = reduction_blocks(n);
    float *d_in, *d_out, *d_tmp;
    bench::check(cudaMalloc(&d_in, n * sizeof(float)), "cudaMalloc in");
    bench::check(cudaMalloc(&d_out, blocks * sizeof(float)), "cudaMalloc out");
    bench::check(cudaMalloc(&d_tmp, blocks * sizeof(float)), "cudaMalloc tmp");
    bench::check(cudaMemcpy(d_in, h.data(), n * sizeof(float), cudaMemcpyHostToDevice), "copy in");
    bench::check(cudaMemset(d_out, 0xff, blocks * sizeof(float)), "poison out");  // NaN until written

    bench::check(static_cast<cudaError_t>(reduction_sum(n, d_in, d_out, d_tmp)), "reduction");
    float got = 0.0f;
    bench::check(cudaMemcpy(&got, d_out, sizeof(float), cudaMemcpyDeviceToHost), "copy sum back");
    if (!(std::fabs(got - ref) <= 1e-5 * mag)) {
        std::printf("CIQ_CHECK FAIL (sum %.9g, expected %.9g)\n", got, ref);
        return 1;
    }
    std::printf("CIQ_CHECK PASS\n");

    cudaEvent_t beg, end;
    bench::check(cudaEventCreate(&beg), "cudaEventCreate");
    bench::check(cudaEventCreate(&end), "cudaEventCreate");
    bench::check(cudaEventRecord(beg), "cudaEventRecord");
    for (int i = 0; i < iterations; ++i)
        bench::check(static_cast<cudaError_t>(reduction_sum(n, d_in, d_out, d_tmp)), "timed reduction");
    bench::check(cudaEventRecord(end), "cudaEventRecord");
    bench::check(cudaEventSynchronize(end), "cudaEventSynchronize");
    float ms = 0.0f;
    bench::check(cudaEventElapsedTime(&ms, beg, end), "cudaEventElapsedTime");
    const double seconds = ms / 1000.0 / iterations;
    std::printf("Reduction, Throughput = %.4f GB/s, Time = %.7f s, Size = %u Elements, NumDevsUsed = %d, "
                "Workgroup = %u\n", 1.0e-9 * n * sizeof(float) / seconds, seconds, static_cast<unsigned>(n), 1,
                static_cast<unsigned>(reduction_max_threads()));
    return 0;
}
