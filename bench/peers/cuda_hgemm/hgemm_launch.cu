// The launch of upstream's HGEMM kernels as their own launchers do it (src/mma/mma_async_stageN.cu:
// initMmaAsyncStageN() and mmaAsyncStageN()), with two of their constants as -D source parameters so
// that ciq_build can search them: HGEMM_STAGES picks which of upstream's kernels runs (its K_STAGE:
// 2, 3 or 4 shared-memory stages; each is its own upstream file, compiled unmodified), and
// HGEMM_BLOCK_STRIDE is upstream's BLOCK_STRIDE, the grid's swizzle width (how many column tiles of C
// consecutive blocks take): the kernels read it from gridDim, so only the launch uses it. Defaults:
// upstream's own choice in its README's best kernel, 3 stages, stride 16.
#include "hgemm_launch.h"

#include <algorithm>

#ifndef HGEMM_STAGES
#define HGEMM_STAGES 3
#endif
#ifndef HGEMM_BLOCK_STRIDE
#define HGEMM_BLOCK_STRIDE 16
#endif
static_assert(HGEMM_STAGES >= 2 && HGEMM_STAGES <= 4, "HGEMM_STAGES is one of upstream's 2, 3 or 4");

// The kernels, defined in upstream's files (the same signature in each).
#define HGEMM_KERNEL(name) \
    __global__ void name(const half* __restrict__ A, const half* __restrict__ B, half* __restrict__ C, size_t M, \
                         size_t N, size_t K)
HGEMM_KERNEL(mmaAsyncStage2Kernel);
HGEMM_KERNEL(mmaAsyncStage3Kernel);
HGEMM_KERNEL(mmaAsyncStage4Kernel);

namespace {
// Upstream's tile constants, the same in the three files.
constexpr size_t kBlockRows = 256, kBlockCols = 128, kThreads = 256, kAbSmemStride = 32, kCSmemStride = 128;

#if HGEMM_STAGES == 2
constexpr auto kKernel = mmaAsyncStage2Kernel;
#elif HGEMM_STAGES == 3
constexpr auto kKernel = mmaAsyncStage3Kernel;
#else
constexpr auto kKernel = mmaAsyncStage4Kernel;
#endif

size_t div_up(size_t a, size_t b) { return (a + b - 1) / b; }
}  // namespace

int hgemm_stages() { return HGEMM_STAGES; }
int hgemm_block_stride() { return HGEMM_BLOCK_STRIDE; }

cudaError_t hgemm(const half* A, const half* B, half* C, size_t M, size_t N, size_t K) {
    // Upstream's initMmaAsyncStageN(): the pipeline's stages of A and B tiles, or C's tile, whichever is more.
    static const size_t smem = std::max((kBlockRows + kBlockCols) * kAbSmemStride * sizeof(half) * HGEMM_STAGES,
                                        kBlockRows * kCSmemStride * sizeof(half));
    static const cudaError_t set =
        cudaFuncSetAttribute(kKernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem));
    if (set != cudaSuccess) return set;
    const dim3 block(kThreads);
    const dim3 grid(HGEMM_BLOCK_STRIDE, div_up(M, kBlockRows), div_up(N, kBlockCols * HGEMM_BLOCK_STRIDE));
    kKernel<<<grid, block, smem>>>(A, B, C, M, N, K);
    return cudaGetLastError();
}
