// TEST DOUBLE for a benchmark with its own check: `tiled` holds TILE floats of shared memory (less
// is better for shared_bytes), and a tile under 16 is "too small for the data": the check fails.
// CHECKED_NO_GPU set: the run says there is no GPU, as a real benchmark does on a machine without one.
// CHECKED_BROKEN set: it fails whatever TILE is, as one the loader cannot start does (a library not found).
#include <stdio.h>
#include <stdlib.h>

#ifndef TILE
#define TILE 32
#endif

__global__ void tiled(float* out, const float* in) {
  __shared__ float tile[TILE];
  tile[threadIdx.x] = in[threadIdx.x];
  __syncthreads();
  out[threadIdx.x] = tile[(threadIdx.x + 1) % TILE];
}

int main(int argc, char** argv) {
  (void)argc;
  if (getenv("CHECKED_NO_GPU") != nullptr) {
    printf("CIQ_ERROR no-gpu (the test double was told there is none)\n");
    return 1;
  }
  if (getenv("CHECKED_BROKEN") != nullptr) {
    // As the dynamic loader says it: the program's path as it was started (the tune's scratch tree).
    fprintf(stderr, "%s: error while loading shared libraries: libcublas.so.13: cannot open shared "
                    "object file: No such file or directory\n", argv[0]);
    return 127;
  }
  if (TILE < 16) {
    printf("CIQ_CHECK FAIL\ntile %d is too small for the data\n", TILE);
    return 1;
  }
  printf("CIQ_CHECK PASS\n");
  return 0;
}
