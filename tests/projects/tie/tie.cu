// A register-hungry kernel: 64 accumulators fed by 8 float4 loads per step (96 registers at sm_90a).
#define ACC 64
#define U 8
__global__ void tie(const float4* __restrict__ a, float* __restrict__ out, int n, int stride) {
  int t = blockIdx.x * blockDim.x + threadIdx.x;
  float acc[ACC];
#pragma unroll
  for (int k = 0; k < ACC; ++k) acc[k] = 0.f;
  for (int j = 0; j < n; j += U) {
    float4 x[U];
#pragma unroll
    for (int u = 0; u < U; ++u) x[u] = a[(j + u) * stride + t];
#pragma unroll
    for (int u = 0; u < U; ++u)
#pragma unroll
      for (int k = 0; k < ACC; ++k) acc[k] = fmaf(acc[k], (k & 1) ? x[u].x : x[u].y, (k & 2) ? x[u].z : x[u].w);
  }
  float s = 0.f;
#pragma unroll
  for (int k = 0; k < ACC; ++k) s += acc[k] * (float)(k + 1);
  out[t] = s;
}
