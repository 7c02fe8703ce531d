// upstream reduction.cpp's getNumBlocksAndThreads() and the GPU part of benchmarkReduce() (the
// partial sums reduced again on the GPU until one is left, cpuFinalThreshold 1), for upstream's
// default kernel 7 (reduce7: warp shuffles, several elements per thread). Upstream's --threads and
// --maxblocks options (defaults 256 and 64) are the -D source parameters REDUCTION_MAX_THREADS and
// REDUCTION_MAX_BLOCKS. The kernels are upstream/reduction/reduction_kernel.cu, unmodified.
#include "reduction_launch.h"

#include <algorithm>

#include <cuda_runtime.h>

#include "reduction.h"

#ifndef REDUCTION_MAX_THREADS
#define REDUCTION_MAX_THREADS 256
#endif
#ifndef REDUCTION_MAX_BLOCKS
#define REDUCTION_MAX_BLOCKS 64
#endif

namespace {
constexpr int kWhichKernel = 7;

unsigned int nextPow2(unsigned int x) {
    --x;
    x |= x >> 1;
    x |= x >> 2;
    x |= x >> 4;
    x |= x >> 8;
    x |= x >> 16;
    return ++x;
}

// upstream's, for kernels >= 3 (the grid-size limit it checks cannot bind at these sizes).
void getNumBlocksAndThreads(int n, int maxBlocks, int maxThreads, int& blocks, int& threads) {
    threads = (n < maxThreads * 2) ? nextPow2((n + 1) / 2) : maxThreads;
    blocks = (n + (threads * 2 - 1)) / (threads * 2);
    blocks = std::min(maxBlocks, blocks);
}
}  // namespace

// upstream reduction.cpp's, which reduction_kernel.cu declares extern "C" and calls.
extern "C" bool isPow2(unsigned int x) { return ((x & (x - 1)) == 0); }

int reduction_max_threads() { return REDUCTION_MAX_THREADS; }
int reduction_max_blocks() { return REDUCTION_MAX_BLOCKS; }

int reduction_blocks(int n) {
    int blocks = 0, threads = 0;
    getNumBlocksAndThreads(n, REDUCTION_MAX_BLOCKS, REDUCTION_MAX_THREADS, blocks, threads);
    return blocks;
}

int reduction_sum(int n, float* d_idata, float* d_odata, float* d_tmp) {
    int numBlocks = 0, numThreads = 0;
    getNumBlocksAndThreads(n, REDUCTION_MAX_BLOCKS, REDUCTION_MAX_THREADS, numBlocks, numThreads);
    reduce<float>(n, numThreads, numBlocks, kWhichKernel, d_idata, d_odata);
    cudaError_t status = cudaGetLastError();
    int s = numBlocks;
    while (status == cudaSuccess && s > 1) {
        int threads = 0, blocks = 0;
        getNumBlocksAndThreads(s, REDUCTION_MAX_BLOCKS, REDUCTION_MAX_THREADS, blocks, threads);
        status = cudaMemcpy(d_tmp, d_odata, s * sizeof(float), cudaMemcpyDeviceToDevice);
        if (status != cudaSuccess) break;
        reduce<float>(s, threads, blocks, kWhichKernel, d_tmp, d_odata);
        status = cudaGetLastError();
        s = (s + (threads * 2 - 1)) / (threads * 2);
    }
    return status;
}
