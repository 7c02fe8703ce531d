// A user's kernel beside Thrust's algorithms (each instantiates CUB kernels in this file).
#include <thrust/copy.h>
#include <thrust/device_vector.h>
#include <thrust/reduce.h>
#include <thrust/sort.h>

__global__ void scale(const float* in, float* out, int n) {
  // 48 values held at once: a kernel a register cap can move (the cap's values start at 32).
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float v[48];
#pragma unroll
  for (int k = 0; k < 48; ++k) v[k] = in[i + k * n];
  float acc = 0.f;
#pragma unroll
  for (int a = 0; a < 48; ++a) acc += v[a] * v[47 - a] + v[(a * 7) % 48];
  out[i] = acc;
}

struct Positive {
  __host__ __device__ bool operator()(float v) const { return v > 0.f; }
};

float pipeline(thrust::device_vector<float>& values, thrust::device_vector<float>& kept) {
  thrust::sort(values.begin(), values.end());
  auto end = thrust::copy_if(values.begin(), values.end(), kept.begin(), Positive());
  return thrust::reduce(kept.begin(), end, 0.f);
}

void run_scale(const float* in, float* out, int n) { scale<<<(n + 255) / 256, 256>>>(in, out, n); }
