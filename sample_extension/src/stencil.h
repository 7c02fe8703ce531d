// 3D 25-point star stencil (radius 4, 8th order in space) on a float grid,
// zero outside the grid:
//   out(x,y,z) = c0*u(x,y,z) + sum_{r=1..4} c_r * (u(x±r,y,z) + u(x,y±r,z) + u(x,y,z±r))
#pragma once

#include <cuda_runtime.h>

struct CiqStencilConfig {
    int bx, by, ry, zchunk;  // threads in x and y, outputs per thread in y, planes per block
};

constexpr int kCiqStencilRadius = 4;

CiqStencilConfig ciq_stencil_config();

// c[0..4]: the centre and per-radius coefficients (constant memory; call once).
cudaError_t ciq_stencil_set_coefficients(const float* c);

// Device pointers, x fastest: in and out hold nx*ny*nz floats and must not alias.
cudaError_t ciq_stencil_apply(const float* in, float* out, int nx, int ny, int nz, cudaStream_t stream);
