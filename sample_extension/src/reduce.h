// Memory-bound sum of a float vector: two passes (per-block partial sums,
// then one block over the partials), deterministic for a given launch shape.
#pragma once

#include <cstddef>
#include <cuda_runtime.h>

struct CiqReduceConfig {
    int block, items;
};

CiqReduceConfig ciq_reduce_config();

// Number of floats of scratch space ciq_reduce_sum needs for n inputs.
std::size_t ciq_reduce_scratch(std::size_t n, int sm_count);

// Device pointers: *result = sum(x[0..n)). `scratch` holds
// ciq_reduce_scratch(n, sm_count) floats.
cudaError_t ciq_reduce_sum(const float* x, std::size_t n, float* scratch,
                           float* result, int sm_count, cudaStream_t stream);

// Host pointer convenience wrapper (allocates, copies, reduces, frees).
cudaError_t ciq_reduce_sum_host(const float* x, std::size_t n, float* result,
                                char* error, std::size_t error_size);
