// TEST DOUBLE for bench/compileiq_side_by_side/run.sh --dry-run on a machine without a GPU.
// It stands in for CompileIQ's reduction.cu: a cub::BlockReduce kernel that ptxas
// compiles with each candidate's ACF, and the same output lines ("Time = ... s",
// "Test passed"); but no CUDA call runs: each run sleeps DRY_BENCH_MS and prints a
// time with a little noise. (Without the real one's thrust, its compile is lighter:
// the dry run checks the steps, not the compile's cost.)
#include <cub/block/block_reduce.cuh>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <thread>

#ifndef DRY_BENCH_MS
#define DRY_BENCH_MS 300
#endif

template <int Block>
__global__ void dry_reduce(const int* __restrict__ in, int* __restrict__ out, unsigned n) {
    using Reduce = cub::BlockReduce<int, Block>;
    __shared__ typename Reduce::TempStorage storage;
    int sum = 0;
    for (unsigned i = blockIdx.x * Block + threadIdx.x; i < n; i += Block * gridDim.x) sum += in[i];
    int block = Reduce(storage).Sum(sum);
    if (threadIdx.x == 0) out[blockIdx.x] = block;
}

// Never called (argc is never 1000): the kernel is instantiated and launched in the host code, as the real one is.
static int never(int n) {
    dry_reduce<256><<<64, 256>>>(nullptr, nullptr, static_cast<unsigned>(n));
    return 0;
}

int main(int argc, char** argv) {
    int n = 1 << 26;
    for (int i = 1; i < argc; i++)
        if (std::strncmp(argv[i], "-n=", 3) == 0) n = std::atoi(argv[i] + 3);
    if (argc == 1000) return never(n);
    std::this_thread::sleep_for(std::chrono::milliseconds(DRY_BENCH_MS));
    std::mt19937 noise(static_cast<unsigned>(std::chrono::steady_clock::now().time_since_epoch().count()));
    double seconds = 6.0e-5 * (1.0 + 0.02 * std::uniform_real_distribution<double>(-1, 1)(noise));
    std::printf("Reduction, Throughput = %.4f GB/s, Time = %.5f s, Size = %d Elements\n",
                1.0e-9 * n * sizeof(int) / seconds, seconds, n);
    std::printf("GPU result = 0\nCPU result = 0\nTest passed\n");
    return 0;
}
