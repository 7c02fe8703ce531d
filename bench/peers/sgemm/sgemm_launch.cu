// upstream src/runner.cu's runSgemmWarptiling(), with its tile constants as -D source
// parameters (defaults: upstream's active "Settings for A6000") so that ciq_build can search
// them as upstream's scripts/kernel_10_autotuner.sh does; its static_asserts are kept as they are.
#include "sgemm_launch.h"

#include "src/kernels/10_kernel_warptiling.cuh"

#ifndef K10_NUM_THREADS
#define K10_NUM_THREADS 128
#endif
#ifndef K10_BN
#define K10_BN 128
#endif
#ifndef K10_BM
#define K10_BM 128
#endif
#ifndef K10_BK
#define K10_BK 16
#endif
#ifndef K10_WN
#define K10_WN 64
#endif
#ifndef K10_WM
#define K10_WM 64
#endif
#ifndef K10_WNITER
#define K10_WNITER 4
#endif
#ifndef K10_TN
#define K10_TN 4
#endif
#ifndef K10_TM
#define K10_TM 8
#endif

void sgemm_warptiling(int M, int N, int K, float alpha, float* A, float* B, float beta, float* C) {
  dim3 blockDim(K10_NUM_THREADS);

  constexpr uint NUM_WARPS = K10_NUM_THREADS / 32;

  // warptile in threadblocktile
  static_assert((K10_BN % K10_WN == 0) and (K10_BM % K10_WM == 0));
  static_assert((K10_BN / K10_WN) * (K10_BM / K10_WM) == NUM_WARPS);

  // threads in warpsubtile
  static_assert((K10_WM * K10_WN) % (WARPSIZE * K10_TM * K10_TN * K10_WNITER) ==
                0);
  constexpr uint K10_WMITER =
      (K10_WM * K10_WN) / (32 * K10_TM * K10_TN * K10_WNITER);
  // warpsubtile in warptile
  static_assert((K10_WM % K10_WMITER == 0) and (K10_WN % K10_WNITER == 0));

  static_assert((K10_NUM_THREADS * 4) % K10_BK == 0,
                "NUM_THREADS*4 must be multiple of K9_BK to avoid quantization "
                "issues during GMEM->SMEM tiling (loading only parts of the "
                "final row of Bs during each iteraion)");
  static_assert((K10_NUM_THREADS * 4) % K10_BN == 0,
                "NUM_THREADS*4 must be multiple of K9_BN to avoid quantization "
                "issues during GMEM->SMEM tiling (loading only parts of the "
                "final row of As during each iteration)");
  static_assert(K10_BN % (16 * K10_TN) == 0,
                "BN must be a multiple of 16*TN to avoid quantization effects");
  static_assert(K10_BM % (16 * K10_TM) == 0,
                "BM must be a multiple of 16*TM to avoid quantization effects");
  static_assert((K10_BM * K10_BK) % (4 * K10_NUM_THREADS) == 0,
                "BM*BK must be a multiple of 4*256 to vectorize loads");
  static_assert((K10_BN * K10_BK) % (4 * K10_NUM_THREADS) == 0,
                "BN*BK must be a multiple of 4*256 to vectorize loads");

  dim3 gridDim(CEIL_DIV(N, K10_BN), CEIL_DIV(M, K10_BM));
  sgemmWarptiling<K10_BM, K10_BN, K10_BK, K10_WM, K10_WN, K10_WNITER, K10_TM,
                  K10_TN, K10_NUM_THREADS>
      <<<gridDim, blockDim>>>(M, N, K, alpha, A, B, beta, C);
}
