#include "tile.h"

#ifndef BLOCK
#define BLOCK 64
#endif
#ifndef UNROLL
#define UNROLL 1
#endif

__global__ void __launch_bounds__(BLOCK) scale(float* out, const float* in) {
  float acc[TILE];
#pragma unroll
  for (int k = 0; k < TILE; ++k) acc[k] = in[k * BLOCK + threadIdx.x] * UNROLL;
  float sum = 0.0f;
#pragma unroll
  for (int k = 0; k < TILE; ++k) sum += acc[k] * acc[(k + 1) % TILE];
  out[threadIdx.x] = sum;
}
