// One FlashInfer FA2 prefill kernel (upstream's SinglePrefillWithKVCacheKernel: mma.sync m16n8k16 on FP16,
// cp.async K/V tiles, online softmax), launched as upstream's SinglePrefillWithKVCacheDispatched launches it
// when the grid needs no split over the KV length. Head dimension FI_HEAD_DIM (128, or 256 in the
// attention_kernels_hd256 target: a compile definition of the library, never searched), FP16 in and out, FP32
// accumulation, no mask, no positional encoding; Q, K, V and O in upstream's NHD layout: [sequence][head][dim].
#pragma once

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

#ifndef FI_HEAD_DIM
#define FI_HEAD_DIM 128
#endif
static_assert(FI_HEAD_DIM == 64 || FI_HEAD_DIM == 128 || FI_HEAD_DIM == 256, "FI_HEAD_DIM: 64, 128 or 256");

// O = softmax(Q K^T / sqrt(FI_HEAD_DIM)) V for every head; seq_q a multiple of fi_cta_tile_q() is not required.
cudaError_t fi_prefill(const half* q, const half* k, const half* v, half* o, uint32_t seq_q, uint32_t seq_kv,
                       uint32_t heads, cudaStream_t stream = nullptr);
// The tile the kernel was compiled with (-DFI_CTA_TILE_Q, -DFI_NUM_MMA_KV; defaults: upstream's choice on
// an H100 or H200 for this problem).
uint32_t fi_cta_tile_q();
uint32_t fi_num_mma_kv();
