// Memory-bound reduction: sum of a float vector.
//
// Pass 1: a grid sized to fill the GPU walks the input in chunks of
// BLOCK * ITEMS floats; each thread keeps ITEMS independent loads in flight
// (the unroll that hides DRAM latency) and the block reduces with warp
// shuffles into one partial sum. Pass 2: one block sums the partials.
// BLOCK and ITEMS are source parameters (-DCIQ_REDUCE_BLOCK=..., 
// -DCIQ_REDUCE_ITEMS=...); load-cache and unrolling flags matter here.
//
// This library is built with separable compilation (-rdc): the block-level
// reduction lives in reduce_block.cu and is resolved at device-link time.

#include "reduce.h"
#include "reduce_block.cuh"

#include <algorithm>
#include <cstdio>

#ifndef CIQ_REDUCE_ITEMS
#define CIQ_REDUCE_ITEMS 8
#endif

namespace {

constexpr int kBlock = CIQ_REDUCE_BLOCK;
constexpr int kItems = CIQ_REDUCE_ITEMS;

static_assert(kItems >= 1 && kItems <= 64, "CIQ_REDUCE_ITEMS must be in [1, 64]");

__global__ void partial_sums(const float* __restrict__ x, size_t n, float* __restrict__ partial) {
    constexpr size_t chunk = static_cast<size_t>(kBlock) * kItems;
    float sum = 0.0f;
    for (size_t base = static_cast<size_t>(blockIdx.x) * chunk; base < n;
         base += static_cast<size_t>(gridDim.x) * chunk) {
        float values[kItems];
#pragma unroll
        for (int i = 0; i < kItems; ++i) {
            const size_t index = base + static_cast<size_t>(i) * kBlock + threadIdx.x;
            values[i] = index < n ? x[index] : 0.0f;
        }
#pragma unroll
        for (int i = 0; i < kItems; ++i) sum += values[i];
    }
    sum = ciq_block_sum(sum);
    if (threadIdx.x == 0) partial[blockIdx.x] = sum;
}

__global__ void final_sum(const float* __restrict__ partial, int count, float* __restrict__ result) {
    float sum = 0.0f;
    for (int i = threadIdx.x; i < count; i += kBlock) sum += partial[i];
    sum = ciq_block_sum(sum);
    if (threadIdx.x == 0) *result = sum;
}

int grid_size(size_t n, int sm_count) {
    const size_t chunk = static_cast<size_t>(kBlock) * kItems;
    const size_t needed = (n + chunk - 1) / chunk;
    // Enough resident blocks to fill every SM (2048 threads each); more only
    // adds partials.
    const size_t full = static_cast<size_t>(std::max(sm_count, 1)) * (2048 / kBlock);
    return static_cast<int>(std::max<size_t>(1, std::min(needed, full)));
}

void set_error(char* error, std::size_t size, const char* what, cudaError_t status) {
    if (error != nullptr && size > 0) {
        std::snprintf(error, size, "%s: %s (%s)", what, cudaGetErrorString(status),
                      cudaGetErrorName(status));
    }
}

}  // namespace

CiqReduceConfig ciq_reduce_config() { return {kBlock, kItems}; }

std::size_t ciq_reduce_scratch(std::size_t n, int sm_count) {
    return static_cast<std::size_t>(grid_size(n, sm_count));
}

cudaError_t ciq_reduce_sum(const float* x, std::size_t n, float* scratch,
                           float* result, int sm_count, cudaStream_t stream) {
    if (n == 0) return cudaMemsetAsync(result, 0, sizeof(float), stream);
    const int blocks = grid_size(n, sm_count);
    partial_sums<<<blocks, kBlock, 0, stream>>>(x, n, scratch);
    cudaError_t status = cudaGetLastError();
    if (status != cudaSuccess) return status;
    final_sum<<<1, kBlock, 0, stream>>>(scratch, blocks, result);
    return cudaGetLastError();
}

cudaError_t ciq_reduce_sum_host(const float* x, std::size_t n, float* result,
                                char* error, std::size_t error_size) {
    int device = 0, sm_count = 0;
    float *dx = nullptr, *scratch = nullptr, *dresult = nullptr;
    cudaError_t status = cudaSuccess;
    const char* step = "";
    const size_t bytes = sizeof(float) * std::max<size_t>(n, 1);

    if (status == cudaSuccess) { step = "cudaGetDevice"; status = cudaGetDevice(&device); }
    if (status == cudaSuccess) {
        step = "cudaDeviceGetAttribute";
        status = cudaDeviceGetAttribute(&sm_count, cudaDevAttrMultiProcessorCount, device);
    }
    if (status == cudaSuccess) { step = "cudaMalloc(x)"; status = cudaMalloc(&dx, bytes); }
    if (status == cudaSuccess) {
        step = "cudaMalloc(scratch)";
        status = cudaMalloc(&scratch, sizeof(float) * ciq_reduce_scratch(n, sm_count));
    }
    if (status == cudaSuccess) { step = "cudaMalloc(result)"; status = cudaMalloc(&dresult, sizeof(float)); }
    if (status == cudaSuccess && n > 0) {
        step = "copy x";
        status = cudaMemcpy(dx, x, sizeof(float) * n, cudaMemcpyHostToDevice);
    }
    if (status == cudaSuccess) { step = "reduce launch"; status = ciq_reduce_sum(dx, n, scratch, dresult, sm_count, 0); }
    if (status == cudaSuccess) { step = "reduce"; status = cudaDeviceSynchronize(); }
    if (status == cudaSuccess) {
        step = "copy result";
        status = cudaMemcpy(result, dresult, sizeof(float), cudaMemcpyDeviceToHost);
    }
    if (status != cudaSuccess) set_error(error, error_size, step, status);

    for (float* p : {dx, scratch, dresult}) {
        if (p == nullptr) continue;
        const cudaError_t freed = cudaFree(p);
        if (status == cudaSuccess && freed != cudaSuccess) {
            status = freed;
            set_error(error, error_size, "cudaFree", freed);
        }
    }
    return status;
}

// C interface (kernels_c.h) for the Python extension.
#include "kernels_c.h"

extern "C" int sample_reduce_sum_host(const float* x, size_t n, float* result, char* error,
                                      size_t error_size) {
    return static_cast<int>(ciq_reduce_sum_host(x, n, result, error, error_size));
}

extern "C" void sample_reduce_params(int values[2]) {
    const CiqReduceConfig config = ciq_reduce_config();
    values[0] = config.block;
    values[1] = config.items;
}
