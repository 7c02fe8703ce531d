"""A tiny setuptools project with one CUDA kernel, built through ciq_build.setuptools_ext."""

import os

from setuptools import setup

from ciq_build.setuptools_ext import CudaExtension, build_ext

setup(
    name="ciq-setuptools-example",
    version="0.1",
    packages=["pkg"],
    ext_modules=[
        CudaExtension(
            "pkg._kern",
            # KERN_CUDA_ONLY: a library of .cu files alone, loaded with ctypes (no Python module of C++ sources).
            sources=["pkg/kern.cu"] if os.environ.get("KERN_CUDA_ONLY") else ["pkg/kern.cu", "pkg/mod.cpp"],
            depends=["pkg/kern.h"],
            ciq_target="kern",
            pin_dir="ciq",
            # KERN_ARCHITECTURES: the per-architecture pin test builds for two.
            cuda_architectures=os.environ.get("KERN_ARCHITECTURES", "90a").split(";"),
            params=["CIQ_TILE=choice(16,32,64)"],
            # KERN_LIBRARIES: the toolkit-library test links one more.
            libraries=list(filter(None, os.environ.get("KERN_LIBRARIES", "").split(";"))),
        )
    ],
    cmdclass={"build_ext": build_ext},
)
