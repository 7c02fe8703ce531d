// Static shared memory sized by TILE: `transpose` holds a TILE x TILE tile of floats
// (4 * TILE * TILE bytes), `row_sum` one row of TILE floats (4 * TILE bytes).
#ifndef TILE
#define TILE 32
#endif

__global__ void transpose(float* out, const float* in, int n) {
  __shared__ float tile[TILE][TILE];
  int x = blockIdx.x * TILE + threadIdx.x, y = blockIdx.y * TILE + threadIdx.y;
  tile[threadIdx.y][threadIdx.x] = in[y * n + x];
  __syncthreads();
  out[x * n + y] = tile[threadIdx.x][threadIdx.y];
}

__global__ void row_sum(float* out, const float* in) {
  __shared__ float row[TILE];
  row[threadIdx.x] = in[blockIdx.x * TILE + threadIdx.x];
  __syncthreads();
  float sum = 0.0f;
  for (int k = 0; k < TILE; ++k) sum += row[(threadIdx.x + k) % TILE];
  out[blockIdx.x * TILE + threadIdx.x] = sum;
}
