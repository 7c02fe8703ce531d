// 3D 25-point star stencil, radius 4: the inner loop of seismic (RTM) and
// high-order finite-difference codes.
//
// The classic z-marching scheme (Micikevicius, GPGPU-2, 2009): a block of
// BX x BY threads owns a BX x (BY*RY) column of the grid over ZCHUNK planes.
// Each thread keeps, for each of its RY outputs, the 2R+1 values along z in
// registers (a shifting queue: RY*(2R+1) = 18 live values at RY=2, the
// register-pressure part), and the current x-y plane with its x and y halos
// lives in shared memory. Every plane is read from DRAM about once (the halos
// and the 2R planes above and below each z chunk come mostly from L2).
//
// Source parameters (-D): CIQ_STENCIL_BX, CIQ_STENCIL_BY, CIQ_STENCIL_RY,
// CIQ_STENCIL_ZCHUNK. Scheduling of the queue shifts, the shared-memory loads
// and the halo branches is the compiler's.

#include "stencil.h"

#include <algorithm>

#ifndef CIQ_STENCIL_BX
#define CIQ_STENCIL_BX 32
#endif
#ifndef CIQ_STENCIL_BY
#define CIQ_STENCIL_BY 8
#endif
#ifndef CIQ_STENCIL_RY
#define CIQ_STENCIL_RY 2
#endif
#ifndef CIQ_STENCIL_ZCHUNK
#define CIQ_STENCIL_ZCHUNK 32
#endif

namespace {

constexpr int R = kCiqStencilRadius;
constexpr int BX = CIQ_STENCIL_BX;
constexpr int BY = CIQ_STENCIL_BY;
constexpr int RY = CIQ_STENCIL_RY;
constexpr int ZCHUNK = CIQ_STENCIL_ZCHUNK;
constexpr int TILE_Y = BY * RY;

static_assert(BX >= R && BY >= R, "the halo loads need at least R threads in x and in y");
static_assert(BX % 32 == 0 && BX * BY <= 1024, "whole warps in x, at most 1024 threads");
static_assert(RY >= 1 && RY <= 8 && ZCHUNK >= 1, "RY in [1, 8], ZCHUNK >= 1");

__constant__ float c_coef[R + 1];

__device__ __forceinline__ float load(const float* __restrict__ in, int x, int y, int z, int nx, int ny,
                                      int nz) {
    const bool inside = x >= 0 && x < nx && y >= 0 && y < ny && z >= 0 && z < nz;
    return inside ? __ldg(in + (static_cast<size_t>(z) * ny + y) * nx + x) : 0.0f;
}

__global__ void __launch_bounds__(BX * BY)
stencil25(const float* __restrict__ in, float* __restrict__ out, int nx, int ny, int nz) {
    __shared__ float tile[TILE_Y + 2 * R][BX + 2 * R];

    const int tx = threadIdx.x, ty = threadIdx.y;
    const int x = blockIdx.x * BX + tx;
    const int y0 = blockIdx.y * TILE_Y;  // first row of this block's tile
    const int z0 = blockIdx.z * ZCHUNK;
    const int z1 = min(z0 + ZCHUNK, nz);

    // q[j][k] = u(x, y_j, z - R + k): the z queue of output j (y_j = y0 + ty + j*BY).
    float q[RY][2 * R + 1];
#pragma unroll
    for (int j = 0; j < RY; ++j) {
        const int y = y0 + ty + j * BY;
#pragma unroll
        for (int k = 1; k < 2 * R + 1; ++k) q[j][k] = load(in, x, y, z0 - R - 1 + k, nx, ny, nz);
    }

    for (int z = z0; z < z1; ++z) {
#pragma unroll
        for (int j = 0; j < RY; ++j) {
            const int y = y0 + ty + j * BY;
#pragma unroll
            for (int k = 0; k < 2 * R; ++k) q[j][k] = q[j][k + 1];
            q[j][2 * R] = load(in, x, y, z + R, nx, ny, nz);
        }

        __syncthreads();  // the previous plane's readers are done with the tile
#pragma unroll
        for (int j = 0; j < RY; ++j) {
            const int row = R + ty + j * BY, y = y0 + ty + j * BY;
            tile[row][R + tx] = q[j][R];
            if (tx < R) {  // x halos of this row
                tile[row][tx] = load(in, x - R, y, z, nx, ny, nz);
                tile[row][R + BX + tx] = load(in, x + BX, y, z, nx, ny, nz);
            }
        }
        if (ty < R) {  // y halos of this column
            tile[ty][R + tx] = load(in, x, y0 - R + ty, z, nx, ny, nz);
            tile[R + TILE_Y + ty][R + tx] = load(in, x, y0 + TILE_Y + ty, z, nx, ny, nz);
        }
        __syncthreads();

#pragma unroll
        for (int j = 0; j < RY; ++j) {
            const int row = R + ty + j * BY, col = R + tx, y = y0 + ty + j * BY;
            float v = c_coef[0] * q[j][R];
#pragma unroll
            for (int r = 1; r <= R; ++r) {
                const float s = (tile[row][col - r] + tile[row][col + r]) +
                                (tile[row - r][col] + tile[row + r][col]) + (q[j][R - r] + q[j][R + r]);
                v = fmaf(c_coef[r], s, v);
            }
            if (x < nx && y < ny) out[(static_cast<size_t>(z) * ny + y) * nx + x] = v;
        }
    }
}

}  // namespace

CiqStencilConfig ciq_stencil_config() { return {BX, BY, RY, ZCHUNK}; }

cudaError_t ciq_stencil_set_coefficients(const float* c) {
    return cudaMemcpyToSymbol(c_coef, c, sizeof(float) * (R + 1));
}

cudaError_t ciq_stencil_apply(const float* in, float* out, int nx, int ny, int nz, cudaStream_t stream) {
    if (nx <= 0 || ny <= 0 || nz <= 0) return cudaErrorInvalidValue;
    const dim3 block(BX, BY);
    const dim3 grid((nx + BX - 1) / BX, (ny + TILE_Y - 1) / TILE_Y, (nz + ZCHUNK - 1) / ZCHUNK);
    stencil25<<<grid, block, 0, stream>>>(in, out, nx, ny, nz);
    return cudaGetLastError();
}
