// A tunable kernel: CIQ_TILE is a -D source parameter (default 64: 32 registers on sm_90a, 8: 10).
#include <cuda_runtime.h>

#include "kern.h"

#ifndef CIQ_TILE
#define CIQ_TILE 64
#endif
#if CIQ_TILE > 64
// A candidate that does not compile: the tune records it as compile_failed and goes on.
#error "CIQ_TILE above 64 is not supported"
#endif

__global__ void scale(float* data, int n, float factor)
{
    int base = (blockIdx.x * blockDim.x + threadIdx.x) * CIQ_TILE;
#pragma unroll
    for (int i = 0; i < CIQ_TILE; ++i) {
        if (base + i < n) {
            data[base + i] *= factor;
        }
    }
}

extern "C" int kern_tile(void) { return CIQ_TILE; }

extern "C" int kern_device_count(int* count)
{
    *count = 0;
    return static_cast<int>(cudaGetDeviceCount(count));
}

extern "C" int kern_scale(float* data, int n, float factor)
{
    float* device = nullptr;
    size_t bytes = static_cast<size_t>(n) * sizeof(float);
    cudaError_t err = cudaMalloc(&device, bytes);
    if (err != cudaSuccess) return static_cast<int>(err);
    err = cudaMemcpy(device, data, bytes, cudaMemcpyHostToDevice);
    if (err == cudaSuccess) {
        int threads = 128;
        int per_block = threads * CIQ_TILE;
        scale<<<(n + per_block - 1) / per_block, threads>>>(device, n, factor);
        err = cudaGetLastError();
    }
    if (err == cudaSuccess) err = cudaMemcpy(data, device, bytes, cudaMemcpyDeviceToHost);
    cudaFree(device);
    return static_cast<int>(err);
}
