#include "reduce_block.cuh"

__device__ float ciq_block_sum(float value) {
    constexpr int kWarps = CIQ_REDUCE_BLOCK / 32;
    __shared__ float warp_sums[kWarps];
#pragma unroll
    for (int offset = 16; offset > 0; offset /= 2)
        value += __shfl_down_sync(0xffffffffu, value, offset);
    const int lane = threadIdx.x % 32;
    const int warp = threadIdx.x / 32;
    if (lane == 0) warp_sums[warp] = value;
    __syncthreads();
    if (warp == 0) {
        value = lane < kWarps ? warp_sums[lane] : 0.0f;
#pragma unroll
        for (int offset = 16; offset > 0; offset /= 2)
            value += __shfl_down_sync(0xffffffffu, value, offset);
    }
    return value;
}
