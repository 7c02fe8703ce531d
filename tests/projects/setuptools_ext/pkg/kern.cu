// A tunable kernel: CIQ_TILE is a -D source parameter (a pin may set it).
#include <cuda_runtime.h>

#include "kern.h"

#ifndef CIQ_TILE
#define CIQ_TILE 16
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
