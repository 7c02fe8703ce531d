"""CUDA kernels tuned with ciq_build: a register-blocked SGEMM and a reduction.

``build_info()`` reports, per kernel library, which pinned compiler controls
(``ciq/<target>.json``) the build applied and the tile parameters compiled in.
"""

from sample_extension._core import build_info, gemm, reduce_sum

__all__ = ["build_info", "gemm", "reduce_sum"]
