// `heavy` holds 24 values in registers: a register cap (-maxrregcount) or a
// ptxas level changes its machine code, differently per architecture.
#ifndef SCALE
#define SCALE 1
#endif

__global__ void heavy(float* out, const float* in, int n) {
  float acc[24];
#pragma unroll
  for (int k = 0; k < 24; ++k) acc[k] = in[k * n + threadIdx.x] * SCALE;
#pragma unroll
  for (int round = 0; round < 4; ++round) {
#pragma unroll
    for (int k = 0; k < 24; ++k) acc[k] = acc[k] * acc[(k + 1) % 24] + 1.0f;
  }
  float sum = 0.0f;
#pragma unroll
  for (int k = 0; k < 24; ++k) sum += acc[k];
  out[threadIdx.x] = sum;
}
