"""A setuptools project whose CUDA kernel is tuned by `python -m ciq_build tune kern --setuptools .`."""

import sys

from setuptools import setup

from ciq_build.setuptools_ext import CudaExtension, build_ext

setup(
    name="ciq-setuptools-tune-example",
    version="0.1",
    packages=["pkg"],
    ext_modules=[
        CudaExtension(
            "pkg._kern",
            sources=["pkg/kern.cu", "pkg/mod.cpp"],
            depends=["pkg/kern.h"],
            ciq_target="kern",
            pin_dir="ciq",
            cuda_architectures=["90a"],
            params=["CIQ_TILE=choice(8,64,128)"],
            ciq_benchmark=[sys.executable, "bench.py"],
            ciq_objectives=["registers"],
            ciq_timeout=120,
        )
    ],
    cmdclass={"build_ext": build_ext},
)
