# find_package(ciq_build CONFIG) entry point.
#
# Found through scikit-build-core's `cmake.root` entry point when a project is
# built with pip, or with -Dciq_build_DIR="$(python -m ciq_build --cmake-dir)"
# for plain CMake builds. It provides one public function,
# ciq_tune_target(), defined in ciq_build.cmake beside this file.

include_guard(GLOBAL)

# ciq_build.cmake checks the CMake version first thing.
include("${CMAKE_CURRENT_LIST_DIR}/ciq_build.cmake")

set(ciq_build_FOUND TRUE)
