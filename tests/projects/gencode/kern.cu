// `heavy` holds 20 * SCALE values in registers: SCALE, a register cap
// (-maxrregcount) or a ptxas level changes its machine code, per architecture.
#ifndef SCALE
#define SCALE 2
#endif

constexpr int kValues = 20 * SCALE;

__global__ void heavy(float* out, const float* in, int n) {
  float acc[kValues];
#pragma unroll
  for (int k = 0; k < kValues; ++k) acc[k] = in[k * n + threadIdx.x];
#pragma unroll
  for (int round = 0; round < 4; ++round) {
#pragma unroll
    for (int k = 0; k < kValues; ++k) acc[k] = acc[k] * acc[(k + 1) % kValues] + 1.0f;
  }
  float sum = 0.0f;
#pragma unroll
  for (int k = 0; k < kValues; ++k) sum += acc[k];
  out[threadIdx.x] = sum;
}
