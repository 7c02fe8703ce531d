// Two kernels: `heavy` holds 4 * (X + 1) values in registers, `tiny` few.
#ifndef X
#define X 3
#endif

#define UNROLL 4  // NOT guarded, on purpose: a -DUNROLL is overridden, so PARAMS UNROLL does nothing

constexpr int kValues = 4 * (X + 1);

__global__ void tiny(float* out, const float* in) { out[threadIdx.x] = in[threadIdx.x] * UNROLL; }

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
