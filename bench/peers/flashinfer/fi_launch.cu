// Launches upstream's FA2 prefill kernel (upstream/include/flashinfer/attention/prefill.cuh, unmodified) for
// one configuration, as its SinglePrefillWithKVCacheDispatched does without a KV split: the same kernel
// traits, shared memory opt-in, grid (query tiles x 1 x heads) and block (32 x warps over Q x warps over KV).
// Upstream's dispatcher picks the query tile and the KV tile (NUM_MMA_KV, in 16-key steps) at run time from
// the problem and the card's shared memory; here they are -D parameters, searched by ciq_build:
//   FI_CTA_TILE_Q  query rows per block: 64 or 128 (upstream's choice for long sequences: 128)
//   FI_NUM_MMA_KV  16-key steps per KV tile: 1, 2, 4 or 8 (upstream's on an H100 or H200 with CTA_TILE_Q 128: 4)
//   FI_NUM_WARPS_KV  warps that split each KV tile: 1, or 2 (8 warps a block; upstream's kernel merges their
//                    softmax states, as it does for its 16-row query tile; its dispatcher picks 1 at 64 and 128)
#include "fi_launch.h"

#include <cmath>
#include <type_traits>

#include <flashinfer/attention/default_prefill_params.cuh>
#include <flashinfer/attention/prefill.cuh>
#include <flashinfer/attention/variants.cuh>

#ifndef FI_CTA_TILE_Q
#define FI_CTA_TILE_Q 128
#endif
#ifndef FI_NUM_MMA_KV
#define FI_NUM_MMA_KV 4
#endif
#ifndef FI_NUM_WARPS_KV
#define FI_NUM_WARPS_KV get_num_warps_kv(FI_CTA_TILE_Q)
#endif

namespace fi_peer {  // named, not anonymous: nvcc's host stub of a kernel cannot name an anonymous namespace's types

using namespace flashinfer;

using Params = SinglePrefillParams<half, half, half>;
using Variant = DefaultAttention</*use_custom_mask=*/false, /*use_sliding_window=*/false,
                                 /*use_logits_soft_cap=*/false, /*use_alibi=*/false>;
constexpr uint32_t kCtaTileQ = FI_CTA_TILE_Q;
using Traits = KernelTraits<MaskMode::kNone, kCtaTileQ, get_num_mma_q(kCtaTileQ), FI_NUM_MMA_KV, FI_HEAD_DIM / 16,
                            FI_HEAD_DIM / 16, get_num_warps_q(kCtaTileQ), FI_NUM_WARPS_KV,
                            PosEncodingMode::kNone, half, half, half, /*DTypeQKAccum=*/float, int32_t, Variant>;
static_assert(!Traits::IsInvalid(), "FI_CTA_TILE_Q and FI_NUM_MMA_KV name a configuration upstream never launches");
using Storage = std::conditional_t<Traits::USE_SINGLE_PREFILL_SOFTMAX_VO_SPLIT, typename Traits::SharedStoragePaged,
                                   typename Traits::SharedStorage>;

}  // namespace fi_peer

using namespace fi_peer;

uint32_t fi_cta_tile_q() { return kCtaTileQ; }
uint32_t fi_num_mma_kv() { return FI_NUM_MMA_KV; }

cudaError_t fi_prefill(const half* q, const half* k, const half* v, half* o, uint32_t seq_q, uint32_t seq_kv,
                       uint32_t heads, cudaStream_t stream) {
    // Upstream's own defaults: sm_scale 1/sqrt(head_dim), no window (-1), rope scale 1 and theta 1e4 (unused).
    Params params(const_cast<half*>(q), const_cast<half*>(k), const_cast<half*>(v), nullptr, o, nullptr, nullptr,
                  heads, heads, seq_q, seq_kv, heads * FI_HEAD_DIM, FI_HEAD_DIM, heads * FI_HEAD_DIM, FI_HEAD_DIM,
                  FI_HEAD_DIM, -1, 0.0f, 1.0f / std::sqrt(float(FI_HEAD_DIM)), 1.0f, 1e4f);
    params.partition_kv = false;
    auto kernel = SinglePrefillWithKVCacheKernel<Traits, Params>;
    const size_t smem = sizeof(Storage);
    cudaError_t status = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem));
    if (status != cudaSuccess) return status;
    void* args[] = {(void*)&params};
    const dim3 blocks(ceil_div(seq_q, kCtaTileQ), 1, heads);
    const dim3 threads(32, Traits::NUM_WARPS_Q, Traits::NUM_WARPS_KV);
    return cudaLaunchKernel((void*)kernel, blocks, threads, args, smem, stream);
}
