// fi_launch.cu at head dimension 256 (Gemma's), with the query tile upstream's dispatcher picks there on an
// H100 or H200 (FA2DetermineCtaTileQ: 64 for head dimension 256; 128 would leave the output fragment more
// registers than a thread has, which KernelTraits::IsInvalid refuses). The KV tile's default is fi_launch.cu's,
// upstream's pick at 256 too: min(5 by shared memory for two blocks an SM, 8 by registers) rounded down to 4.
// FI_HEAD_DIM=256 comes from the target's compile definitions (CMakeLists.txt), so the benchmark sees it too.
#ifndef FI_CTA_TILE_Q
#define FI_CTA_TILE_Q 64
#endif
#include "fi_launch.cu"
