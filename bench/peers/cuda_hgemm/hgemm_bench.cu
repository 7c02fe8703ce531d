// Benchmark of upstream's HGEMM (hgemm_launch.cu): one size M = N = K, checked, then timed as upstream's
// tester does (one event pair around `repeats` launches, after a warm-up), printed as the SGEMM peer's
// line so that ciq_build reads the time with METRIC (CMakeLists.txt):
//   Average elapsed time: (%9.6f) s, performance: (%7.1f) GFLOPS. size: (%d).
// A wrong result prints CIQ_CHECK FAIL and exits 1 (the tune marks the candidate invalid, never pins it).
#include <cstdio>
#include <vector>

#include "bench_common.h"
#include "hgemm_check.h"
#include "hgemm_launch.h"

int main(int argc, char** argv) {
    const bench::Options opts{argc, argv};
    opts.only({"--size", "--repeats"});
    const size_t n = static_cast<size_t>(opts.get("--size", 8192));
    const int repeats = static_cast<int>(opts.get("--repeats", 20));
    if (n % 256 != 0) {
        std::fprintf(stderr, "--size must be a multiple of 256 (upstream's kernels have no edge handling)\n");
        return 64;
    }
    bench::require_gpu();
    const size_t count = n * n;
    const std::vector<half> A = hgemm_check::random_half(count, 1), B = hgemm_check::random_half(count, 2);
    half *dA, *dB, *dC;
    bench::check(cudaMalloc(&dA, count * sizeof(half)), "cudaMalloc A");
    bench::check(cudaMalloc(&dB, count * sizeof(half)), "cudaMalloc B");
    bench::check(cudaMalloc(&dC, count * sizeof(half)), "cudaMalloc C");
    bench::check(cudaMemcpy(dA, A.data(), count * sizeof(half), cudaMemcpyHostToDevice), "copy A");
    bench::check(cudaMemcpy(dB, B.data(), count * sizeof(half), cudaMemcpyHostToDevice), "copy B");
    bench::check(cudaMemset(dC, 0xFF, count * sizeof(half)), "poison C");  // all NaN until written

    bench::check(hgemm(dA, dB, dC, n, n, n), "launch");
    std::vector<half> C(count);
    bench::check(cudaMemcpy(C.data(), dC, count * sizeof(half), cudaMemcpyDeviceToHost), "copy C back");
    if (hgemm_check::check(A, B, C, n, n, n)) return 1;

    bench::check(hgemm(dA, dB, dC, n, n, n), "warm-up");
    bench::check(cudaDeviceSynchronize(), "warm-up");
    cudaEvent_t beg, end;
    bench::check(cudaEventCreate(&beg), "cudaEventCreate");
    bench::check(cudaEventCreate(&end), "cudaEventCreate");
    bench::check(cudaEventRecord(beg), "cudaEventRecord");
    for (int r = 0; r < repeats; ++r) bench::check(hgemm(dA, dB, dC, n, n, n), "timed launch");
    bench::check(cudaEventRecord(end), "cudaEventRecord");
    bench::check(cudaEventSynchronize(end), "cudaEventSynchronize");
    bench::check(cudaGetLastError(), "timed launches");
    float ms = 0.0f;
    bench::check(cudaEventElapsedTime(&ms, beg, end), "cudaEventElapsedTime");
    const double seconds = ms / 1000.0, flops = 2.0 * n * n * n;
    std::printf("upstream mma_async_stage%d, grid stride %d\n", hgemm_stages(), hgemm_block_stride());
    std::printf("Average elapsed time: (%9.6f) s, performance: (%7.1f) GFLOPS. size: (%zu).\n", seconds / repeats,
                (repeats * flops * 1e-9) / seconds, n);
    return 0;
}
