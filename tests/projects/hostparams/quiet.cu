#include "quiet.h"

__global__ void fill(float* out) { out[threadIdx.x] = TILE * threadIdx.x; }
