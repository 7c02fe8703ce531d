#[=======================================================================[.rst:
ciq_build
---------

Tune the CUDA compiler for a CMake target and apply the pinned winner.
Loaded by ``find_package(ciq_build)`` (ciq_build-config.cmake); needs CMake
3.24 or newer.

Commands
^^^^^^^^

::

  ciq_tune_target(<target>
                  [BENCHMARK <exe-target> [ARGS <arg>...]
                   | [ARGS_SETS <name:args>... [SCORE <geomean|worst>]]]
                  [METRIC <regex> [UNIT <s|ms|us|ns|rate>]]
                  [OBJECTIVES <objective>...]
                  [PARAMS <NAME=space>...]
                  [CONSTRAINTS <expression>...]
                  [SEARCH_SPACE <space>...]
                  [SEEDS <seed>...]
                  [PIN_DIR <dir>]
                  [TIMEOUT <seconds>]
                  [THREADS_PER_BLOCK <threads> | <expression> [<threads>]]
                  [DYNAMIC_SHARED_MEMORY <bytes> | <expression> [<bytes>]]
                  [DESCRIPTION <text>]
                  [ALLOW_NUMERICS])

Registers ``<target>`` (a library or executable with CUDA sources) for
``python -m ciq_build tune <target>`` and applies its pinned record
``<PIN_DIR>/<target>.json``.

``BENCHMARK <exe-target>``
  The executable that measures a candidate (``ARGS``: its arguments); it
  prints ``CIQ_METRIC time_ms=<value>`` lines (docs/protocol.md: the line protocol).
  Needed by the benchmark objectives (``time``).
``ARGS_SETS <name:args>...``, ``SCORE <geomean|worst>``
  Several problem sizes instead of ``ARGS``, e.g. ``ARGS_SETS "small:-n 1024"
  "large:-n 65536"`` (the arguments split like a shell command line). Each
  run runs the benchmark once per size; a candidate's score is the geometric
  mean of its per-size ratios to the defaults (``SCORE geomean``, the
  default) or its worst ratio (``SCORE worst``). The journal keeps each size's
  figures (``time_ms@small``).
``METRIC <regex>``, ``UNIT <s|ms|us|ns|rate>``
  For a benchmark that prints its own figure instead: the regex's first
  group is the number, in ``UNIT`` (default ``ms``): a time, or a rate that
  is higher when better (``TFLOPS``, ``GFLOP/s``, ``GB/s``, ``items/s``),
  which ``time`` reads as the time a unit of work takes. Only with ``BENCHMARK``.
``OBJECTIVES <objective>...``
  What the search minimises or maximises (README: "Objectives"); none: the
  driver's default.
``PARAMS <NAME=space>...``
  Preprocessor values the search may choose (``-DNAME=VALUE``).
``CONSTRAINTS <expression>...``
  Expressions over the PARAMS names (``"BX*BY <= 1024"``) every
  configuration the search proposes meets (docs/cmake.md: ``CONSTRAINTS``).
``SEARCH_SPACE <space>...``
  The compiler controls the search may change.
``SEEDS <seed>...``
  Known-good configurations the search evaluates first (docs/cmake.md: ``SEEDS``):
  a pinned record, an ACF, a folder of them (relative paths from
  ``CMAKE_CURRENT_SOURCE_DIR``), or controls such as ``"-Xptxas=-O2
  -DTILE=32"``. ``tune --seed-from`` replaces them.
``PIN_DIR <dir>``
  Where the pinned record lives, relative to ``CMAKE_CURRENT_SOURCE_DIR``
  (default ``${CMAKE_CURRENT_SOURCE_DIR}/ciq``); a plain path, no ``..``.
``TIMEOUT <seconds>``
  A candidate's build or benchmark limit (default 60).
``THREADS_PER_BLOCK <threads> | <expression> [<threads>]``
  The threads a block of the target's kernels has, for the ``occupancy``
  objective: a number, or a PARAMS name or an expression over them
  (``"(128/TM)*(128/TN)"``, the CONSTRAINTS language) that each candidate's
  values give; then the defaults' number, where the sources' own ``#define``
  of a name is not one (docs/cmake.md: ``THREADS_PER_BLOCK``).
``DYNAMIC_SHARED_MEMORY <bytes> | <expression> [<bytes>]``
  The bytes of dynamic shared memory (``extern __shared__``) a block of the
  kernels that use it takes at launch, which the ``occupancy`` objective adds
  to their static shared memory; declared as ``THREADS_PER_BLOCK``
  (docs/cmake.md: ``DYNAMIC_SHARED_MEMORY``).
``DESCRIPTION <text>``
  What the target is, in one line; ``python -m ciq_build show`` prints it.
``ALLOW_NUMERICS``
  The search may change floating-point results.

Sources, ``CUDA_ARCHITECTURES`` and the benchmark target may still be added
after the call (the rest is finished at the end of the top-level
CMakeLists.txt), but ``CUDA_ARCHITECTURES`` must be set before it.

Cache variables read
^^^^^^^^^^^^^^^^^^^^

``CIQ_DISABLE``
  ON: ignore every pinned record (status ``disabled``).
``CIQ_STRICT``
  ON: a toolkit or architecture mismatch refuses the pin, instead of a
  warning and status ``skipped``.
``CIQ_PYTHON``
  The Python that runs the per-architecture gencode launcher (default: the
  one ``find_package(Python3)`` finds).
``CIQ_TUNE_TARGET``, ``CIQ_TUNE_OPTIONS_FILE``
  Set by the tuning driver in its scratch trees (a tuning build): the
  target's CUDA compiles read ``CIQ_TUNE_OPTIONS_FILE``, which the driver
  rewrites for every candidate; the pin is not read.
``CIQ_TUNE_ARCHITECTURES``
  ``tune --architecture``: the tuned target's one architecture.

Target properties set (read them, never set them)
^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^

``CIQ_PIN_STATUS``
  ``applied`` | ``none`` | ``disabled`` | ``skipped`` | ``tuning``
``CIQ_PIN_FILE``
  The pinned record consulted.
``CIQ_NVCC_ARGUMENTS``
  The arguments written to the options file.
``CIQ_OPTIONS_FILE``
  The options file the target's CUDA compiles read.

What it sets and writes
^^^^^^^^^^^^^^^^^^^^^^^

One mechanism serves the real build and the tuning build: every tuned
target's CUDA compiles get ``--options-file=<file>``, and that file is in the
``OBJECT_DEPENDS`` of the target's CUDA sources, so a change rebuilds exactly
those objects.

``<CMAKE_CURRENT_BINARY_DIR>/ciq/<target>.nvcc-options``
  The real build's options file, written from the validated pinned record
  (empty without one).
``<...>/ciq/<target>.sm_<arch>.nvcc-options`` and ``CUDA_COMPILER_LAUNCHER``
  Only for a pin whose architectures have different controls: each
  architecture's device arguments, applied through ciq_build's gencode
  launcher (a target with a launcher of its own refuses such a pin).
``<CMAKE_BINARY_DIR>/ciq/targets/<target>.json``
  The target's manifest for the driver (file(GENERATE)); its JSON Schema is
  docs/target-manifest.schema.json (ciq_build/project/manifest_schema.py).
``CMAKE_CONFIGURE_DEPENDS``
  The pin dir (or its nearest existing parent) and the pin's files: a pin
  that appears, changes or goes away reconfigures.
Global properties ``CIQ_BUILD_TARGETS`` (the registered targets) and
``CIQ_BUILD_CMAKE_DIR`` (this folder).
#]=======================================================================]

include_guard(GLOBAL)

if(CMAKE_VERSION VERSION_LESS 3.24)
  message(FATAL_ERROR
    "ciq_build needs CMake 3.24 or newer (this is ${CMAKE_VERSION}); "
    "install a newer one with `pip install cmake`.")
endif()

# Functions record the policies in force where they are defined; pin them so
# that the caller's cmake_minimum_required() cannot change their behaviour.
cmake_policy(PUSH)
cmake_policy(VERSION 3.24...3.31)

# A directory-scoped variable would be invisible to a second subdirectory
# that finds the package (the include guard skips the file there).
set_property(GLOBAL PROPERTY CIQ_BUILD_CMAKE_DIR "${CMAKE_CURRENT_LIST_DIR}")

# The module's parts, one idea each (each file's header says what it owns), included inside the policy
# settings above so that their functions record them. Each depends only on the parts above it.
include("${CMAKE_CURRENT_LIST_DIR}/ciq_build_rules.cmake")         # the rule book, and what a call may say
include("${CMAKE_CURRENT_LIST_DIR}/ciq_build_rules_record.cmake")  # its three layers of a pinned record
include("${CMAKE_CURRENT_LIST_DIR}/ciq_build_pin.cmake")           # a pinned record read and checked
include("${CMAKE_CURRENT_LIST_DIR}/ciq_build_resolve.cmake")       # what a build applies of it
include("${CMAKE_CURRENT_LIST_DIR}/ciq_build_apply.cmake")         # applied to the target
include("${CMAKE_CURRENT_LIST_DIR}/ciq_build_call.cmake")          # a ciq_tune_target() call checked
include("${CMAKE_CURRENT_LIST_DIR}/ciq_build_manifest.cmake")      # the target's manifest for the driver
# Only a project's configure registers targets; a script (cmake -P, as ciq_build_check_pin.cmake runs) has no
# directory to defer to and no manifests to drop.
if(NOT CMAKE_SCRIPT_MODE_FILE)
  cmake_language(DEFER DIRECTORY "${CMAKE_SOURCE_DIR}" CALL _ciq_drop_stale_manifests)
endif()

# ---------------------------------------------------------------------------
# ciq_tune_target() and the steps it runs at the call
# ---------------------------------------------------------------------------

# ciq_tune_target(): see the contract at the top of this file.
function(ciq_tune_target target)
  cmake_parse_arguments(PARSE_ARGV 1 ARG
    # Options
    "ALLOW_NUMERICS"       # the search may change floating-point results
    # One-value keywords
    "BENCHMARK;METRIC;UNIT;PIN_DIR;TIMEOUT;SCORE;DESCRIPTION"
    # Multi-value keywords
    "ARGS;ARGS_SETS;OBJECTIVES;PARAMS;CONSTRAINTS;SEARCH_SPACE;SEEDS;THREADS_PER_BLOCK;DYNAMIC_SHARED_MEMORY")
  _ciq_check_call(${target})
  # The defaults (TIMEOUT's is tune's, ciq_build/core/settings.py DEFAULT_TIMEOUT; a test keeps them equal).
  if(NOT DEFINED ARG_TIMEOUT)
    set(ARG_TIMEOUT 60)
  endif()
  if(NOT DEFINED ARG_UNIT)
    set(ARG_UNIT ms)
  endif()
  set(pin_dir ciq)  # PIN_DIR's default, taken from CMAKE_CURRENT_SOURCE_DIR
  if(DEFINED ARG_PIN_DIR)
    set(pin_dir "${ARG_PIN_DIR}")
  endif()
  _ciq_pin_location(TARGET ${target} PIN_DIR "${pin_dir}" PIN_DIR_VAR pin_dir PIN_FILE_VAR pin_file)
  # A seed's path is the call's, as PIN_DIR's; a controls list ("-Xptxas=-O2 -DTILE=32") stays as written.
  set(seeds "")
  foreach(seed IN LISTS ARG_SEEDS)
    if(NOT seed MATCHES "^[ \t]*-" AND NOT IS_ABSOLUTE "${seed}")
      set(seed "${CMAKE_CURRENT_SOURCE_DIR}/${seed}")
    endif()
    list(APPEND seeds "${seed}")
  endforeach()
  _ciq_apply_pin(TARGET ${target} PIN_FILE "${pin_file}" PIN_DIR "${pin_dir}"
    OPTIONS_FILE "${CMAKE_CURRENT_BINARY_DIR}/ciq/${target}.nvcc-options"
    ALLOW_NUMERICS "${ARG_ALLOW_NUMERICS}" PARAMS ${ARG_PARAMS}
    OPTIONS_FILE_VAR options_file STATUS_VAR status ARGS_VAR args DEPENDS_VAR depends)
  _ciq_watch_pin_dir("${pin_dir}")
  set_target_properties(${target} PROPERTIES
    CIQ_PIN_STATUS "${status}"
    CIQ_PIN_FILE "${pin_file}"
    CIQ_NVCC_ARGUMENTS "${args}"
    CIQ_OPTIONS_FILE "${options_file}"
    # Read by the deferred finalisation (_ciq_finalize_target).
    _CIQ_OBJECT_DEPENDS "${options_file};${depends}"
    _CIQ_BENCHMARK "${ARG_BENCHMARK}"
    _CIQ_CALL_FILE "${CMAKE_CURRENT_LIST_FILE}"
    _CIQ_ARGS "${ARG_ARGS}"
    _CIQ_ARGS_SETS "${ARG_ARGS_SETS}"
    _CIQ_SCORE "${ARG_SCORE}"
    _CIQ_METRIC "${ARG_METRIC}"
    _CIQ_METRIC_UNIT "${ARG_UNIT}"
    _CIQ_OBJECTIVES "${ARG_OBJECTIVES}"
    _CIQ_PARAMS "${ARG_PARAMS}"
    _CIQ_CONSTRAINTS "${ARG_CONSTRAINTS}"
    _CIQ_SEEDS "${seeds}"
    _CIQ_SEARCH_SPACE "${ARG_SEARCH_SPACE}"
    _CIQ_PIN_DIR "${pin_dir}"
    _CIQ_TIMEOUT "${ARG_TIMEOUT}"
    _CIQ_THREADS_PER_BLOCK "${ARG_THREADS_PER_BLOCK}"
    _CIQ_DYNAMIC_SHARED_MEMORY "${ARG_DYNAMIC_SHARED_MEMORY}"
    _CIQ_DESCRIPTION "${ARG_DESCRIPTION}"
    _CIQ_ALLOW_NUMERICS "${ARG_ALLOW_NUMERICS}"
    _CIQ_CUDA_COMPILER "${CMAKE_CUDA_COMPILER}"
    _CIQ_CUDA_COMPILER_VERSION "${CMAKE_CUDA_COMPILER_VERSION}")
  _ciq_register(TARGET ${target} OPTIONS_FILE "${options_file}")
endfunction()

# _ciq_pin_location(TARGET <target> PIN_DIR <dir> PIN_DIR_VAR <out> PIN_FILE_VAR <out>):
# the pin dir (<dir> taken from CMAKE_CURRENT_SOURCE_DIR, normalised) and the
# pinned record <pin dir>/<target>.json in it.
function(_ciq_pin_location)
  cmake_parse_arguments(PARSE_ARGV 0 arg "" "TARGET;PIN_DIR;PIN_DIR_VAR;PIN_FILE_VAR" "")
  cmake_path(ABSOLUTE_PATH arg_PIN_DIR BASE_DIRECTORY "${CMAKE_CURRENT_SOURCE_DIR}"
    NORMALIZE OUTPUT_VARIABLE pin_dir)
  string(REGEX REPLACE "/$" "" pin_dir "${pin_dir}")
  set(${arg_PIN_DIR_VAR} "${pin_dir}" PARENT_SCOPE)
  set(${arg_PIN_FILE_VAR} "${pin_dir}/${arg_TARGET}.json" PARENT_SCOPE)
endfunction()

# _ciq_register(TARGET <target> OPTIONS_FILE <file>): make the target's CUDA
# compiles read the options file, and defer its finalisation to the end of the
# top-level directory (ciq_tune_target() has set the properties it reads).
function(_ciq_register)
  cmake_parse_arguments(PARSE_ARGV 0 arg "" "TARGET;OPTIONS_FILE" "")
  target_compile_options(${arg_TARGET} PRIVATE
    "$<$<COMPILE_LANGUAGE:CUDA>:--options-file=${arg_OPTIONS_FILE}>")
  # Sources, CUDA_ARCHITECTURES and the benchmark target may still be added
  # or changed after this call: finish at the end of the top-level directory.
  set_property(GLOBAL APPEND PROPERTY CIQ_BUILD_TARGETS "${arg_TARGET}")
  # DEFER evaluates variable references when the call runs, not now: pass the
  # target's name literally.
  cmake_language(EVAL CODE
    "cmake_language(DEFER DIRECTORY \"\${CMAKE_SOURCE_DIR}\" CALL _ciq_finalize_target [==[${arg_TARGET}]==])")
  get_property(checked GLOBAL PROPERTY _CIQ_BUILD_CHECK_DEFERRED)
  if(NOT checked)
    set_property(GLOBAL PROPERTY _CIQ_BUILD_CHECK_DEFERRED TRUE)
    cmake_language(DEFER DIRECTORY "${CMAKE_SOURCE_DIR}" CALL _ciq_check_tune_target)
    cmake_language(DEFER DIRECTORY "${CMAKE_SOURCE_DIR}" CALL _ciq_check_findcuda_toolkit)
  endif()
endfunction()

# ---------------------------------------------------------------------------
# Deferred steps (end of the top-level CMakeLists.txt)
# ---------------------------------------------------------------------------

# _ciq_finalize_target(<target>): what ciq_tune_target() could not do at its call, deferred to the end of
# the top-level directory: the target has CUDA sources CMake compiles, its CUDA_ARCHITECTURES are those
# the pin was checked against, the options file is in its sources' OBJECT_DEPENDS, its BENCHMARK is an
# executable; then its manifest.
function(_ciq_finalize_target target)
  set(fn "ciq_tune_target(${target})")
  _ciq_cuda_sources(sources ${target})
  _ciq_findcuda_compiled(findcuda ${target})
  if(sources STREQUAL "" AND NOT findcuda STREQUAL "")
    list(JOIN findcuda ", " named)
    _ciq_call_site(site ${target})
    message(FATAL_ERROR "${site}${fn}: '${target}' has no CUDA sources that CMake compiles: FindCUDA's "
      "cuda_add_library() or cuda_add_executable() compiles ${named} by a command of its own, which "
      "no pinned flag reaches. Build the target with CMake's CUDA language instead: CUDA in project(... "
      "LANGUAGES CXX CUDA) or enable_language(CUDA), and add_library() or add_executable() for the "
      "target, with its nvcc flags in target_compile_options() (docs/cmake.md).")
  elseif(sources STREQUAL "")
    # A header-only library's kernels (stdgpu's, CUB's) are compiled by the targets that use it: name them.
    _ciq_cuda_users(users ${target} "${CMAKE_SOURCE_DIR}")
    set(hint "tune the target that compiles your kernels")
    if(NOT users STREQUAL "")
      list(LENGTH users count)
      list(SUBLIST users 0 8 shown)
      list(JOIN shown ", " named)
      if(count GREATER 8)
        string(APPEND named " and ${count} in all")
      endif()
      list(GET users 0 first)
      string(CONCAT hint "its kernels are compiled by the targets that use it. Targets that compile CUDA and "
        "link '${target}': ${named}; tune one of them, e.g. ciq_tune_target(${first} ...)")
    endif()
    _ciq_call_site(site ${target})
    message(FATAL_ERROR "${site}${fn}: '${target}' has no CUDA sources (.cu files or "
      "sources with LANGUAGE CUDA); ${hint}.")
  endif()

  if(CIQ_TUNE_TARGET STREQUAL target AND NOT "${CIQ_TUNE_ARCHITECTURES}" STREQUAL "")
    # tune --architecture: this scratch tree builds the tuned target for that
    # architecture alone (set here, after the project's own settings).
    set_target_properties(${target} PROPERTIES CUDA_ARCHITECTURES "${CIQ_TUNE_ARCHITECTURES}")
  endif()
  _ciq_build_architectures(architectures unread ${target})
  if(NOT unread STREQUAL "" AND CIQ_TUNE_TARGET STREQUAL target)
    _ciq_unread_architectures(${target} FATAL_ERROR "${unread}"
      ", so a tune cannot know which architectures it measures")
  endif()
  get_target_property(pin_status ${target} CIQ_PIN_STATUS)
  get_target_property(checked ${target} _CIQ_PIN_ARCHITECTURES)
  if(NOT checked)
    set(checked "")
  endif()
  get_target_property(read ${target} _CIQ_ARCHITECTURES_READ)
  get_target_property(was_unread ${target} _CIQ_ARCHITECTURES_UNREAD)
  if(read AND NOT ("${checked}" STREQUAL "${architectures}" AND "${was_unread}" STREQUAL "${unread}"))
    if(NOT unread STREQUAL "")
      get_target_property(architectures ${target} CUDA_ARCHITECTURES)  # as written, for the message
    endif()
    # Deferred: CMake names no line of the caller, so the message names the call.
    _ciq_call_site(site ${target})
    get_target_property(pin_file ${target} CIQ_PIN_FILE)
    if(pin_status MATCHES "^(applied|skipped)$")
      set(why "which checked the pinned record ${pin_file} against the architectures as they were")
    else()
      string(CONCAT why "which reads them there: a tune would measure '${architectures}' and pin a record "
        "that this call then checks against '${checked}' and skips")
    endif()
    message(FATAL_ERROR "${site}${fn}: CUDA_ARCHITECTURES changed from '${checked}' to "
      "'${architectures}' after ciq_tune_target(), ${why}. Set CUDA_ARCHITECTURES "
      "(or CMAKE_CUDA_ARCHITECTURES) before calling ciq_tune_target().")
  endif()
  get_target_property(object_depends ${target} _CIQ_OBJECT_DEPENDS)
  foreach(source IN LISTS sources)
    set_property(SOURCE "${source}" TARGET_DIRECTORY ${target} APPEND
      PROPERTY OBJECT_DEPENDS ${object_depends})
  endforeach()

  get_target_property(benchmark ${target} _CIQ_BENCHMARK)
  if(benchmark)
    if(NOT TARGET "${benchmark}")
      _ciq_call_site(site ${target})
      _ciq_executables(executables "${CMAKE_SOURCE_DIR}")
      _ciq_rules_did_you_mean(hint "${benchmark}" ${executables})
      message(FATAL_ERROR "${site}${fn}: BENCHMARK '${benchmark}' is not a target${hint}; "
        "name the add_executable() target of your benchmark.")
    endif()
    get_target_property(benchmark_type "${benchmark}" TYPE)
    if(NOT benchmark_type STREQUAL "EXECUTABLE")
      _ciq_call_site(site ${target})
      message(FATAL_ERROR "${site}${fn}: BENCHMARK '${benchmark}' is a "
        "${benchmark_type}; it must be an executable.")
    endif()
  endif()
  _ciq_architectures_defaulted(defaulted "${architectures}")
  _ciq_write_manifest(TARGET ${target} SOURCES ${sources} ARCHITECTURES ${architectures}
    ARCHITECTURES_DEFAULT ${defaulted} ARCHITECTURES_UNREAD "${unread}")
endfunction()

# _ciq_architectures_defaulted(<out> <architectures>): whether <architectures>, a target's CUDA_ARCHITECTURES, are
# the ones CMake chose because the project set none, so that a tune says it is tuning for CMake's choice (75 with
# CUDA 13, 52 before), not the project's. enable_language(CUDA) caches nvcc's default as CMAKE_CUDA_ARCHITECTURES
# with the help string "CUDA architectures"; a value given with -D replaces the entry and its help string, and
# one set in CMakeLists.txt is a variable or the target's property, which the target then holds instead, unless
# it names the same architectures. The value first seen so is kept (_CIQ_CUDA_ARCHITECTURES_DEFAULT), as an edit
# in ccmake or cmake-gui keeps the help string. CUDAARCHS, the environment's choice, is cached with the same help
# string: the user's, while it is set.
function(_ciq_architectures_defaulted out architectures)
  get_property(help CACHE CMAKE_CUDA_ARCHITECTURES PROPERTY HELPSTRING)
  set(cached "$CACHE{CMAKE_CUDA_ARCHITECTURES}")
  set(chosen_by_cmake FALSE)
  if(help STREQUAL "CUDA architectures" AND "$ENV{CUDAARCHS}" STREQUAL "")
    if(NOT DEFINED CACHE{_CIQ_CUDA_ARCHITECTURES_DEFAULT})
      set(_CIQ_CUDA_ARCHITECTURES_DEFAULT "${cached}" CACHE INTERNAL
        "CMAKE_CUDA_ARCHITECTURES as CMake first chose it, for want of the project's")
    endif()
    set(chosen_by_cmake TRUE)
  endif()
  if(chosen_by_cmake AND "${architectures}" STREQUAL "${cached}"
      AND "${cached}" STREQUAL "$CACHE{_CIQ_CUDA_ARCHITECTURES_DEFAULT}")
    set(${out} true PARENT_SCOPE)
  else()
    set(${out} false PARENT_SCOPE)
  endif()
endfunction()

# _ciq_cuda_sources(<out> <target>): absolute paths of the target's CUDA sources: those CMake compiles as
# CUDA (not a HEADER_FILE_ONLY one, nor one FindCUDA compiles by its own command).
function(_ciq_cuda_sources out target)
  _ciq_findcuda_compiled(findcuda ${target})
  _ciq_compiled_sources(result ${target} "CUDA" "${findcuda}")
  set(${out} "${result}" PARENT_SCOPE)
endfunction()

# _ciq_compiled_sources(<out> <target> <languages> [<skipped names>]): absolute paths of the sources of <target>
# that CMake compiles as one of <languages> (a list: CUDA, or C;CXX for the host's), not a HEADER_FILE_ONLY one,
# nor one whose file name is in <skipped names>. The manifest's cuda_sources, host_sources and the benchmark's
# sources (_ciq_write_manifest).
function(_ciq_compiled_sources out target languages skipped)
  get_target_property(sources ${target} SOURCES)
  get_target_property(source_dir ${target} SOURCE_DIR)
  get_target_property(binary_dir ${target} BINARY_DIR)
  set(result "")
  foreach(source IN LISTS sources)
    if(source MATCHES "\\$<")
      continue()  # $<TARGET_OBJECTS:...> and other generator expressions
    endif()
    get_property(header_only SOURCE "${source}" TARGET_DIRECTORY ${target} PROPERTY HEADER_FILE_ONLY)
    get_filename_component(name "${source}" NAME)
    if(header_only OR name IN_LIST skipped)
      continue()
    endif()
    _ciq_source_language(language "${source}" ${target})
    if(NOT language IN_LIST languages)
      continue()
    endif()
    if(IS_ABSOLUTE "${source}")
      set(path "${source}")
    elseif(EXISTS "${source_dir}/${source}")
      set(path "${source_dir}/${source}")
    else()
      set(path "${binary_dir}/${source}")  # a generated source
    endif()
    cmake_path(NORMAL_PATH path)
    list(APPEND result "${path}")
  endforeach()
  list(REMOVE_DUPLICATES result)
  set(${out} "${result}" PARENT_SCOPE)
endfunction()

# _ciq_source_language(<out> <source> <target>): the language CMake compiles <source> of <target> as: its LANGUAGE
# property, else the C-family language whose CMAKE_<LANG>_SOURCE_FILE_EXTENSIONS hold its extension (exactly, then
# in lower case: .C is C++, .CU CUDA), a .cu file CUDA; "" for a header or another language's file.
function(_ciq_source_language out source target)
  get_property(language SOURCE "${source}" TARGET_DIRECTORY ${target} PROPERTY LANGUAGE)
  if(NOT language STREQUAL "")
    set(${out} "${language}" PARENT_SCOPE)
    return()
  endif()
  get_filename_component(extension "${source}" LAST_EXT)
  string(REGEX REPLACE "^\\." "" extension "${extension}")
  string(TOLOWER "${extension}" lower)
  foreach(spelled IN ITEMS "${extension}" "${lower}")
    foreach(candidate IN ITEMS CUDA C CXX OBJC OBJCXX HIP)
      if(NOT spelled STREQUAL "" AND spelled IN_LIST CMAKE_${candidate}_SOURCE_FILE_EXTENSIONS)
        set(${out} ${candidate} PARENT_SCOPE)
        return()
      endif()
    endforeach()
  endforeach()
  if(lower STREQUAL "cu")
    set(${out} CUDA PARENT_SCOPE)
  else()
    set(${out} "" PARENT_SCOPE)
  endif()
endfunction()

# _ciq_findcuda_compiled(<out> <target>): the names of the .cu files that the legacy FindCUDA module's
# cuda_add_executable() / cuda_add_library() compile for <target> by custom commands (each one linked as
# the object <target>_generated_<name>.o), outside CMake's CUDA language, where no pinned flag reaches.
function(_ciq_findcuda_compiled out target)
  get_target_property(sources ${target} SOURCES)
  set(prefix "${target}_generated_")
  string(LENGTH "${prefix}" prefix_length)
  set(result "")
  foreach(source IN LISTS sources)
    get_filename_component(name "${source}" NAME)
    string(SUBSTRING "${name}" 0 ${prefix_length} start)
    if(start STREQUAL prefix AND name MATCHES "\\.cu\\.(o|obj)$")
      string(SUBSTRING "${name}" ${prefix_length} -1 compiled)
      string(REGEX REPLACE "\\.(o|obj)$" "" compiled "${compiled}")
      list(APPEND result "${compiled}")
    endif()
  endforeach()
  set(${out} "${result}" PARENT_SCOPE)
endfunction()

# _ciq_call_site(<out> <target>): "<file>:<line>: " of the ciq_tune_target(<target>) call, for the
# messages of the deferred finalisation, which CMake places at "CMakeLists.txt:DEFERRED". The file is
# the one the call ran in; the line, that of its first "ciq_tune_target(<target>" there ("" if none).
function(_ciq_call_site out target)
  get_target_property(file ${target} _CIQ_CALL_FILE)
  set(site "")
  if(file AND EXISTS "${file}")
    file(READ "${file}" text)
    string(REGEX REPLACE "([][+.*()^$?|\\])" "\\\\\\1" name "${target}")
    string(REGEX MATCH "^(.*)[Cc][Ii][Qq]_[Tt][Uu][Nn][Ee]_[Tt][Aa][Rr][Gg][Ee][Tt][ \t]*\\([ \t\r\n]*${name}[ \t\r\n)]"
      found "${text}")
    set(site "${file}: ")
    if(NOT found STREQUAL "")
      string(REGEX MATCHALL "\n" newlines "${CMAKE_MATCH_1}")
      list(LENGTH newlines count)
      math(EXPR line "${count} + 1")
      set(site "${file}:${line}: ")
    endif()
  endif()
  set(${out} "${site}" PARENT_SCOPE)
endfunction()

# _ciq_cuda_users(<out> <target> <dir>): the targets of <dir> and its subdirectories that link <target>
# (by its name or an alias of it) and compile CUDA sources of their own.
function(_ciq_cuda_users out target dir)
  set(found "")
  get_property(targets DIRECTORY "${dir}" PROPERTY BUILDSYSTEM_TARGETS)
  foreach(candidate IN LISTS targets)
    get_target_property(type "${candidate}" TYPE)
    if(type STREQUAL "INTERFACE_LIBRARY" OR type STREQUAL "UTILITY")
      continue()
    endif()
    get_target_property(linked "${candidate}" LINK_LIBRARIES)
    foreach(library IN LISTS linked)
      if(NOT TARGET "${library}")
        continue()
      endif()
      get_target_property(real "${library}" ALIASED_TARGET)
      if(NOT real)
        set(real "${library}")
      endif()
      if(real STREQUAL target)
        _ciq_cuda_sources(sources "${candidate}")
        if(NOT sources STREQUAL "")
          list(APPEND found "${candidate}")
        endif()
        break()
      endif()
    endforeach()
  endforeach()
  get_property(subdirectories DIRECTORY "${dir}" PROPERTY SUBDIRECTORIES)
  foreach(subdirectory IN LISTS subdirectories)
    _ciq_cuda_users(more ${target} "${subdirectory}")
    list(APPEND found ${more})
  endforeach()
  set(${out} "${found}" PARENT_SCOPE)
endfunction()

# _ciq_executables(<out> <dir>): the executable targets of <dir> and its subdirectories (for "did you mean").
function(_ciq_executables out dir)
  set(found "")
  get_property(targets DIRECTORY "${dir}" PROPERTY BUILDSYSTEM_TARGETS)
  foreach(candidate IN LISTS targets)
    get_target_property(type "${candidate}" TYPE)
    if(type STREQUAL "EXECUTABLE")
      list(APPEND found "${candidate}")
    endif()
  endforeach()
  get_property(subdirectories DIRECTORY "${dir}" PROPERTY SUBDIRECTORIES)
  foreach(subdirectory IN LISTS subdirectories)
    _ciq_executables(more "${subdirectory}")
    list(APPEND found ${more})
  endforeach()
  set(${out} "${found}" PARENT_SCOPE)
endfunction()

# A tuning build for a target that is not registered would silently tune
# nothing; say so.
function(_ciq_check_tune_target)
  if(NOT "${CIQ_TUNE_TARGET}" STREQUAL "")
    get_property(registered GLOBAL PROPERTY CIQ_BUILD_TARGETS)
    if(NOT CIQ_TUNE_TARGET IN_LIST registered)
      message(FATAL_ERROR "ciq_tune_target: CIQ_TUNE_TARGET is "
        "'${CIQ_TUNE_TARGET}', which no ciq_tune_target() call registered "
        "(registered: ${registered}).")
    endif()
  endif()
endfunction()

# _ciq_check_findcuda_toolkit(): the legacy FindCUDA module (find_package(CUDA)) looks for a toolkit of
# its own (nvcc on PATH, /usr/local/cuda), not CMAKE_CUDA_COMPILER's; one of another release puts that
# release's headers (CUDA_INCLUDE_DIRS) before nvcc's own, which breaks nvcc's compiles with errors that
# do not name the cause. Warned once a configure, where FindCUDA ran in it (its commands exist). Its
# version is the cached one: with CUDA a language, FindCUDA sets the variable CUDA_VERSION to the compiler's.
function(_ciq_check_findcuda_toolkit)
  set(found "$CACHE{CUDA_VERSION}")
  if(NOT COMMAND cuda_add_executable OR found STREQUAL "" OR "${CMAKE_CUDA_COMPILER_VERSION}" STREQUAL "")
    return()
  endif()
  string(REGEX MATCH "^[0-9]+\\.[0-9]+" compiler_release "${CMAKE_CUDA_COMPILER_VERSION}")
  if(found VERSION_EQUAL compiler_release)
    return()
  endif()
  cmake_path(GET CMAKE_CUDA_COMPILER PARENT_PATH compiler_bin)
  cmake_path(GET compiler_bin PARENT_PATH compiler_root)
  message(WARNING "ciq_build: find_package(CUDA) found CUDA ${found} ($CACHE{CUDA_TOOLKIT_ROOT_DIR}), "
    "but CMAKE_CUDA_COMPILER is nvcc ${CMAKE_CUDA_COMPILER_VERSION} (${CMAKE_CUDA_COMPILER}): FindCUDA's "
    "CUDA_INCLUDE_DIRS and CUDA_LIBRARIES are another release's, whose headers break nvcc's compiles "
    "(e.g. \"'__cudaLaunch' was not declared\"). Configure with "
    "-DCUDA_TOOLKIT_ROOT_DIR=\"${compiler_root}\" as well.")
endfunction()

cmake_policy(POP)
