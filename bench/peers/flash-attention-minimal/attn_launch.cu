// upstream flash.cu's forward() host code without PyTorch: the same grid (batch x heads), block (Bc
// threads), shared memory size and softmax scale. Its "TODO: determine Bc, Br dynamically" (both 32)
// is the -D source parameter FLASH_BC (Br = Bc: the kernel loads Q, K and V rows with the same Bc
// threads). A tile of more than 48 KiB of shared memory asks for it (upstream would fail to launch).
#include "attn_launch.h"

#include <cmath>

#include <cuda_runtime.h>

#include "flash_kernel.cuh"

#ifndef FLASH_BC
#define FLASH_BC 32
#endif

int attn_tile() { return FLASH_BC; }

int attn_forward(const float* Q, const float* K, const float* V, int B, int nh, int N, int d,
                 float* l, float* m, float* O) {
    const int Bc = FLASH_BC; const int Br = FLASH_BC;
    const int Tc = ceil((float) N / Bc); const int Tr = ceil((float) N / Br);
    const float softmax_scale = 1.0 / sqrt(d);
    const int sram_size = (3 * Bc * d * sizeof(float)) + (Bc * Br * sizeof(float));
    if (sram_size > 48 * 1024) {
        const cudaError_t status =
            cudaFuncSetAttribute(forward_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, sram_size);
        if (status != cudaSuccess) return status;
    }
    dim3 grid_dim(B, nh);  // batch_size x num_heads
    dim3 block_dim(Bc);  // Bc threads per block
    forward_kernel<<<grid_dim, block_dim, sram_size>>>(Q, K, V, N, d, Tc, Tr, Bc, Br, softmax_scale, l, m, O);
    return cudaGetLastError();
}
