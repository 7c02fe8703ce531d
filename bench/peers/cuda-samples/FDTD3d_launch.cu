// Host side for cuda-samples' FDTD3d kernel (upstream/FDTD3d/inc/FDTD3dGPUKernel.cuh,
// included unmodified): the launch configuration of upstream's fdtdGPU()
// (src/FDTD3dGPU.cu), without its allocations, copies and prints, so that the
// wrapper benchmark can time one timestep alone.
//
// FDTD3D_BLOCK_SIZE is upstream's --block-size option (threads per block; upstream's
// default is k_blockSizeMax, 512), made a compile-time source parameter here so that
// `ciq_tune_target(... PARAMS ...)` can search it. As upstream does, it is rounded down
// to a multiple of k_blockDimX (32), clamped to [k_blockSizeMin, k_blockSizeMax] and
// capped by the kernel's maxThreadsPerBlock (which its register count decides).

#include "FDTD3d_launch.h"
#include "FDTD3dGPUKernel.cuh"

#ifndef FDTD3D_BLOCK_SIZE
#define FDTD3D_BLOCK_SIZE k_blockSizeMax
#endif

static dim3 fdtd3dBlockOnce() {
    int size = FDTD3D_BLOCK_SIZE / k_blockDimX * k_blockDimX;
    size = size < k_blockSizeMin ? k_blockSizeMin : (size > k_blockSizeMax ? k_blockSizeMax : size);
    cudaFuncAttributes attributes{};
    if (cudaFuncGetAttributes(&attributes, FiniteDifferencesKernel) == cudaSuccess && attributes.maxThreadsPerBlock < size)
        size = attributes.maxThreadsPerBlock;
    const int y = size / k_blockDimX < k_blockDimMaxY ? size / k_blockDimX : k_blockDimMaxY;
    return dim3(k_blockDimX, y);
}

static dim3 fdtd3dBlock() {  // once, as upstream's fdtdGPU() decides it once (no host work between timed launches)
    static const dim3 block = fdtd3dBlockOnce();
    return block;
}

int fdtd3dRadius() { return RADIUS; }

int fdtd3dBlocksPerSM() {  // resident blocks per multiprocessor at the block size used (0 on error)
    const dim3 block = fdtd3dBlock();
    int blocks = 0;
    if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, FiniteDifferencesKernel,
                                                      static_cast<int>(block.x * block.y), 0) != cudaSuccess)
        return 0;
    return blocks;
}

cudaError_t fdtd3dSetStencil(const float* coeff) {
    return cudaMemcpyToSymbol(stencil, coeff, (RADIUS + 1) * sizeof(float));
}

cudaError_t fdtd3dStep(float* dst, const float* src, int dimx, int dimy, int dimz, int* block_x, int* block_y) {
    const dim3 block = fdtd3dBlock();
    if (block_x) *block_x = static_cast<int>(block.x);
    if (block_y) *block_y = static_cast<int>(block.y);
    if (static_cast<int>(block.y) < RADIUS) return cudaErrorInvalidConfiguration;  // upstream's check
    const dim3 grid((dimx + block.x - 1) / block.x, (dimy + block.y - 1) / block.y);
    FiniteDifferencesKernel<<<grid, block>>>(dst, src, dimx, dimy, dimz);
    return cudaGetLastError();
}
