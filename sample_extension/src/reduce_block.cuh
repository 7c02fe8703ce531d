// Block-wide sum, shared by the reduction kernels (defined in reduce_block.cu,
// resolved by the device linker: this library uses separable compilation).
#pragma once

#ifndef CIQ_REDUCE_BLOCK
#define CIQ_REDUCE_BLOCK 256
#endif

static_assert(CIQ_REDUCE_BLOCK % 32 == 0 && CIQ_REDUCE_BLOCK >= 32 && CIQ_REDUCE_BLOCK <= 1024,
              "CIQ_REDUCE_BLOCK must be a multiple of 32 in [32, 1024]");

// Sum of `value` over the CIQ_REDUCE_BLOCK threads of the block; valid in
// thread 0. Every thread of the block must call it.
__device__ float ciq_block_sum(float value);
