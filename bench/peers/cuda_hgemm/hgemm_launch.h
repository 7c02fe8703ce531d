// The launch of upstream's mma.sync + cp.async HGEMM kernels (src/mma/mma_async_stage{2,3,4}.cu):
// C (M x N, row-major) = A (M x K, row-major) * B^T, B given as N x K row-major; half in and out,
// half accumulation (mma.sync m16n8k16 f16.f16.f16.f16), M a multiple of 256 and N of 128 * the
// grid stride, K of 32 (upstream's kernels have no edge handling).
#pragma once

#include <cuda_fp16.h>

#include <cstddef>

// Which of upstream's pipelines (2, 3 or 4 shared-memory stages) and the grid swizzle stride the build
// was compiled with (-DHGEMM_STAGES, -DHGEMM_BLOCK_STRIDE), for the benchmark's checks and its output.
int hgemm_stages();
int hgemm_block_stride();

// One launch on the default stream; returns the launch's error (cudaFuncSetAttribute's, the first time).
cudaError_t hgemm(const half* A, const half* B, half* C, size_t M, size_t N, size_t K);
