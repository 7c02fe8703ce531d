# The CMake package (ciq_build-config.cmake) lives in this folder; it is a
# Python package only so that the wheel ships it and scikit-build-core's
# `cmake.root` entry point can locate it.
