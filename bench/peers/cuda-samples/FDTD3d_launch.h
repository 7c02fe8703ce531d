// The wrapper's interface to cuda-samples' FDTD3d kernel (FDTD3d_launch.cu).
// Buffers are upstream's layout: (dimx + 2R) x (dimy + 2R) x (dimz + 2R) floats,
// x fastest; src and dst point at the outer volume's first element (upstream
// passes bufferIn + padding, which puts the inner rows on 128-byte boundaries);
// the kernel writes dst's inner volume only.
#pragma once
#include <cuda_runtime.h>

int fdtd3dRadius();
int fdtd3dBlocksPerSM();  // occupancy of the kernel as built, at the block size it launches with
cudaError_t fdtd3dSetStencil(const float* coeff);  // RADIUS + 1 coefficients
cudaError_t fdtd3dStep(float* dst, const float* src, int dimx, int dimy, int dimz, int* block_x, int* block_y);
