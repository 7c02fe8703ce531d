"""ciq_build: tune the NVIDIA CUDA compiler for a project's own kernels."""

__version__ = "0.1.0"
