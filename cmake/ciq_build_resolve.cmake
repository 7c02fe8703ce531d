# ciq_build's CMake module, part: what a build applies of a pinned record (ciq_build.cmake includes it).
#
# Its entry, _ciq_resolve_pin() (first below), decides for one target as resolve_build_pin
# (ciq_build/pin/apply.py) does: pins disabled, a linked pin dir refused, no record, or the record read
# (ciq_build_pin.cmake) and then skipped where it does not fit this build (another CUDA, another ptxas
# for a ptxas ACF, other architectures: a warning, an error under CIQ_STRICT), refused for an nvcc ACF
# below sm_100, or applied: its nvcc arguments, in one options file or per -gencode. It writes nothing
# to the target; ciq_build_check_pin.cmake drives it alone, many records per process.
#
# Separate because this is where CMake's and Python's builds must reach the same arguments (the
# rule-book agreement test compares them), apart from whether the record is sound (ciq_build_pin.cmake)
# and from how a target is made to use them (ciq_build_apply.cmake).

include_guard(GLOBAL)

# _ciq_resolve_pin(TARGET <target> PIN_FILE <file> PIN_DIR <dir> BINARY_DIR <dir>
#                  ALLOW_NUMERICS <bool> CUDA_VERSION <major.minor>
#                  PTXAS_VERSION <major.minor> [ARCHITECTURES <arch>...]
#                  [PARAMS <NAME=space>...] [TOP_DIR <dir>] RESULT_PREFIX <prefix>)
# What a build applies to <target>, as resolve_build_pin (ciq_build/pin/apply.py)
# decides it. PTXAS_VERSION is the building ptxas's ("" when unknown): a ptxas
# ACF is applied only by the ptxas it was measured with. ARCHITECTURES are the
# ones the build compiles for: a pin is applied only to the architectures it
# was tuned for. BINARY_DIR holds the copies of ACFs whose path nvcc cannot
# pass. TOP_DIR (CMAKE_SOURCE_DIR by default): no folder from it down to the pin
# dir may be a symbolic link. Sets, in the caller:
#   <prefix>_status   applied | none | disabled | skipped
#   <prefix>_args     the options file's arguments
#   <prefix>_depends  the files whose change must rebuild the objects
#   <prefix>_acf_kind "", "ptxas" or "nvcc"
#   <prefix>_message  the status line
#   <prefix>_gencode  for a pin whose architectures have different controls,
#                     those architectures, and <prefix>_gencode_<arch> each
#                     one's device arguments; else ""
function(_ciq_resolve_pin)
  cmake_parse_arguments(PARSE_ARGV 0 arg ""
    "TARGET;PIN_FILE;PIN_DIR;BINARY_DIR;ALLOW_NUMERICS;CUDA_VERSION;PTXAS_VERSION;RESULT_PREFIX;TOP_DIR"
    "ARCHITECTURES;PARAMS")
  set(target "${arg_TARGET}")
  set(pin_file "${arg_PIN_FILE}")
  set(pin_dir "${arg_PIN_DIR}")
  set(out "${arg_RESULT_PREFIX}")
  foreach(what IN ITEMS args depends acf_kind gencode)
    set(pin_${what} "")
  endforeach()
  set(top "${arg_TOP_DIR}")
  if(NOT DEFINED arg_TOP_DIR)
    set(top "${CMAKE_SOURCE_DIR}")
  endif()
  _ciq_linked_folder(linked "${pin_dir}" "${top}")
  if(CIQ_DISABLE)
    set(status disabled)
    set(text "pins disabled (CIQ_DISABLE=ON)")
  elseif(NOT linked STREQUAL "")
    # A committed `ciq -> elsewhere`, or `pins -> elsewhere` with PIN_DIR pins/ciq
    # (pin/record.py check_pin_dir): the pins would be read from wherever it points.
    file(READ_SYMLINK "${linked}" destination)
    set(where "is a symbolic link")
    if(NOT linked STREQUAL pin_dir)
      set(where "lies in ${linked}, a symbolic link")
    endif()
    _ciq_pin_error(${target} "${pin_file}" "the pin directory ${pin_dir} ${where} (to ${destination}); pins "
      "must live in a real directory of the source tree. Replace the link with a directory holding the pins.")
    return()
  elseif(NOT EXISTS "${pin_file}" AND NOT IS_SYMLINK "${pin_file}")
    set(status none)
    set(text "no pinned controls (${pin_file})")
  else()
    _ciq_read_pin(TARGET ${target} PIN_FILE "${pin_file}" PIN_DIR "${pin_dir}"
      ALLOW_NUMERICS "${arg_ALLOW_NUMERICS}" PARAMS ${arg_PARAMS} RESULT_PREFIX record)
    _ciq_pin_stop()
    _ciq_pin_misfit(TARGET ${target} PIN_FILE "${pin_file}" RECORD record CUDA_VERSION "${arg_CUDA_VERSION}"
      PTXAS_VERSION "${arg_PTXAS_VERSION}" ARCHITECTURES ${arg_ARCHITECTURES}
      WARNING_VAR warning SUMMARY_VAR summary)
    if(NOT warning STREQUAL "")
      _ciq_pin_skip()
      set(pin_depends "${pin_file}" ${record_acf})
    else()
      set(kinds "")
      foreach(arch IN LISTS record_applied)
        list(APPEND kinds "${record_acf_kind_${arch}}")
      endforeach()
      _ciq_check_nvcc_acf(TARGET ${target} PIN_FILE "${pin_file}" KINDS ${kinds} ARCHITECTURES ${arg_ARCHITECTURES})
      _ciq_pin_stop()
      _ciq_pin_arguments(TARGET ${target} PIN_FILE "${pin_file}" BINARY_DIR "${arg_BINARY_DIR}" RECORD record
        RESULT_PREFIX pin)
      _ciq_pin_stop()
      set(status applied)
      set(text "${pin_message}")
      set(pin_acf_kind "${record_acf_kind}")
      set(pin_depends "${pin_file}" ${record_acf} ${pin_depends})
      list(REMOVE_DUPLICATES pin_depends)
      foreach(arch IN LISTS pin_gencode)
        set(${out}_gencode_${arch} "${pin_gencode_${arch}}" PARENT_SCOPE)
      endforeach()
    endif()
  endif()
  set(${out}_status "${status}" PARENT_SCOPE)
  set(${out}_message "${text}" PARENT_SCOPE)
  foreach(what IN ITEMS args depends acf_kind gencode)
    set(${out}_${what} "${pin_${what}}" PARENT_SCOPE)
  endforeach()
endfunction()

# _ciq_linked_folder(<out> <pin dir> <top>): the pin dir if it is a symbolic link,
# else the first folder above it and below <top> that is one, else "" (pin/record.py
# check_pin_dir: a pin dir outside <top> is checked itself only).
function(_ciq_linked_folder out pin_dir top)
  set(${out} "" PARENT_SCOPE)
  set(folder "${pin_dir}")
  while(TRUE)
    if(IS_SYMLINK "${folder}")
      set(${out} "${folder}" PARENT_SCOPE)
      return()
    endif()
    get_filename_component(folder "${folder}" DIRECTORY)
    string(FIND "${folder}/" "${top}/" at)
    if(top STREQUAL "" OR folder STREQUAL top OR NOT at EQUAL 0)
      return()
    endif()
  endwhile()
endfunction()

# _ciq_pin_misfit(TARGET <target> PIN_FILE <file> RECORD <prefix> CUDA_VERSION <v>
#                 PTXAS_VERSION <v> [ARCHITECTURES <arch>...] WARNING_VAR <out>
#                 SUMMARY_VAR <out>): why the record read into <prefix>_* does not
# fit this build, as a warning and a status line ("" when it fits): another CUDA,
# another ptxas for a ptxas ACF, other architectures (pin/apply.py check_toolchain,
# check_architectures).
function(_ciq_pin_misfit)
  cmake_parse_arguments(PARSE_ARGV 0 arg "" "TARGET;PIN_FILE;RECORD;CUDA_VERSION;PTXAS_VERSION;WARNING_VAR;SUMMARY_VAR"
    "ARCHITECTURES")
  set(target "${arg_TARGET}")
  set(pin_file "${arg_PIN_FILE}")
  set(cuda "${${arg_RECORD}_cuda}")
  set(ptxas "${${arg_RECORD}_ptxas}")
  set(warning "")
  set(summary "")
  _ciq_architecture_set(tuned ${${arg_RECORD}_architectures})
  _ciq_architecture_set(building ${arg_ARCHITECTURES})
  if(NOT cuda STREQUAL arg_CUDA_VERSION)
    # scikit-build-core (pip) compiles with the first nvcc CMake finds, whatever the tune used, and takes
    # CMake's settings from pip's -C, not -D.
    set(use_compiler "-DCMAKE_CUDA_COMPILER=...")
    if(DEFINED SKBUILD)
      set(use_compiler "pip install -C cmake.define.CMAKE_CUDA_COMPILER=<its nvcc> ..., or CUDACXX=<its nvcc>")
    endif()
    set(warning "ciq_tune_target(${target}): the pinned record ${pin_file} was tuned with CUDA ${cuda}, but "
      "this build compiles with CUDA ${arg_CUDA_VERSION} (${CMAKE_CUDA_COMPILER}). Build with CUDA ${cuda} "
      "(${use_compiler}), or retune with `python -m ciq_build tune ${target}`.")
    set(summary "pin skipped (tuned with CUDA ${cuda}, compiling with ${arg_CUDA_VERSION}): ${pin_file}")
  elseif(${arg_RECORD}_acf_kind STREQUAL "ptxas" AND NOT ptxas STREQUAL ""
      AND NOT arg_PTXAS_VERSION STREQUAL "" AND NOT ptxas STREQUAL arg_PTXAS_VERSION)
    set(warning "ciq_tune_target(${target}): the pinned record ${pin_file} carries a ptxas ACF measured "
      "with ptxas ${ptxas}, but this toolkit's ptxas is ${arg_PTXAS_VERSION}, which cannot read it. Build "
      "with a ptxas ${ptxas} toolkit, or retune with `python -m ciq_build tune ${target}`.")
    set(summary "pin skipped (measured with ptxas ${ptxas}, compiling with ${arg_PTXAS_VERSION}): ${pin_file}")
  elseif(NOT tuned STREQUAL "" AND NOT tuned STREQUAL building)
    _ciq_shown_architectures(tuned_shown ${tuned})
    _ciq_shown_architectures(building_shown ${building})
    list(JOIN tuned ", " tuned_list)
    set(warning "ciq_tune_target(${target}): the pinned record ${pin_file} was tuned for ${tuned_shown}, "
      "but this build compiles for ${building_shown}. Retune for these architectures (`python -m "
      "ciq_build tune ${target}`), or build for ${tuned_list}.")
    set(summary "pin skipped (tuned for ${tuned_shown}, compiling for ${building_shown}): ${pin_file}")
  endif()
  string(JOIN "" warning ${warning})
  set(${arg_WARNING_VAR} "${warning}" PARENT_SCOPE)
  set(${arg_SUMMARY_VAR} "${summary}" PARENT_SCOPE)
endfunction()

# _ciq_shown_architectures(<out> <arch>...): for messages.
function(_ciq_shown_architectures out)
  _ciq_architecture_set(names ${ARGN})
  list(JOIN names ", " shown)
  if(shown STREQUAL "")
    set(shown "nvcc's default architecture")
  endif()
  set(${out} "${shown}" PARENT_SCOPE)
endfunction()

# _ciq_pin_skip(): inside _ciq_resolve_pin, a pin that does not fit this build
# (the variables `warning`, what to say, and `summary`, the status line): an
# error under CIQ_STRICT, else the warning is said and the pin skipped. A macro,
# so that under CIQ_STRICT it returns from _ciq_resolve_pin; it takes no
# argument, since a macro's arguments are evaluated again where they are used.
macro(_ciq_pin_skip)
  if(CIQ_STRICT)
    # The warning names the target and the record already: refused as it is.
    _ciq_pin_refuse("${warning}" " (CIQ_STRICT=ON makes this an error.)")
    _ciq_pin_stop()
  endif()
  if(DEFINED SKBUILD)  # pip shows a build's warnings only with -v: a wheel built without its pin goes unseen
    string(APPEND warning " The pin is skipped for this build. pip shows this only with -v; "
      "-C cmake.define.CIQ_STRICT=ON (or CIQ_STRICT = \"ON\" under [tool.scikit-build.cmake.define]) "
      "makes it an error, so that no wheel is built without its pin.")
    message(WARNING "${warning}")
  else()
    message(WARNING "${warning} The pin is skipped for this build.")
  endif()
  set(status skipped)
  set(text "${summary}")
endmacro()

# _ciq_check_nvcc_acf(TARGET <target> PIN_FILE <file> KINDS <kind>... [ARCHITECTURES <arch>...]):
# refuse an nvcc ACF (one of the applied architectures' ACF KINDS) on a build for an
# architecture below sm_100, its default, "all" or "native", which nvcc would refuse
# mid-build (pin/apply.py check_nvcc_acf).
function(_ciq_check_nvcc_acf)
  cmake_parse_arguments(PARSE_ARGV 0 arg "" "TARGET;PIN_FILE" "KINDS;ARCHITECTURES")
  if(NOT "nvcc" IN_LIST arg_KINDS)
    return()
  endif()
  set(too_old "")
  foreach(building_arch IN LISTS arg_ARCHITECTURES)
    _ciq_architecture_set(name "${building_arch}")
    _ciq_rules_matches(ok nvcc_acf_arch "${name}")
    if(NOT ok)
      list(APPEND too_old "${building_arch}")
    endif()
  endforeach()
  if("${arg_ARCHITECTURES}" STREQUAL "")
    set(too_old "nvcc's default architecture")
  endif()
  if(NOT too_old STREQUAL "")
    list(JOIN too_old ", " too_old)
    _ciq_pin_error(${arg_TARGET} "${arg_PIN_FILE}" "it carries an nvcc ACF, which nvcc applies only for "
      "sm_100 and newer, but this build compiles for ${too_old}. Build for sm_100 and newer only, or "
      "retune and use the ptxas search space (a ptxas ACF works for every architecture).")
  endif()
endfunction()

# _ciq_pin_arguments(TARGET <target> PIN_FILE <file> BINARY_DIR <dir> RECORD <prefix>
#                    RESULT_PREFIX <prefix>): what a build applies of the record read
# into <prefix>_*: each architecture's device arguments (its flags, then its ACF;
# an entry's ACF copy is named for its architecture: pin/apply.py resolve_build_pin),
# as one options file when they are the same for all, else per -gencode. Sets
# <prefix>_args, <prefix>_depends (the ACF copies), <prefix>_gencode (and
# <prefix>_gencode_<arch>, "" for one set) and <prefix>_message.
function(_ciq_pin_arguments)
  cmake_parse_arguments(PARSE_ARGV 0 arg "" "TARGET;PIN_FILE;BINARY_DIR;RECORD;RESULT_PREFIX" "")
  set(in "${arg_RECORD}")
  set(out "${arg_RESULT_PREFIX}")
  set(distinct "")
  set(depends "")
  foreach(arch IN LISTS ${in}_applied)
    set(device_${arch} "${${in}_flags_${arch}}")
    if(NOT ${in}_acf_${arch} STREQUAL "")
      set(copy_name "${arg_TARGET}")
      if(arch IN_LIST ${in}_entries)
        set(copy_name "${arg_TARGET}.${arch}")
      endif()
      _ciq_acf_argument(acf_arg ${copy_name} "${arg_PIN_FILE}" "${${in}_acf_${arch}}"
        "${${in}_acf_kind_${arch}}" "${arg_BINARY_DIR}")
      _ciq_pin_stop()
      list(APPEND device_${arch} "${acf_arg}")
      if(NOT acf_arg MATCHES "=${${in}_acf_${arch}}$")
        list(APPEND depends "${arg_BINARY_DIR}/${copy_name}.acf")
      endif()
    endif()
    string(REPLACE ";" "\n" key "${device_${arch}}")
    list(APPEND distinct "[${key}]")
  endforeach()
  list(REMOVE_DUPLICATES distinct)
  list(LENGTH distinct distinct_count)
  list(GET ${in}_applied 0 first)
  set(gencode "")
  if(distinct_count EQUAL 1)
    # One set of controls for every architecture: plain nvcc, as before.
    set(args ${${in}_flags_${first}} ${${in}_defines})
    if(NOT ${in}_acf_${first} STREQUAL "")
      list(GET device_${first} -1 acf_arg)
      list(APPEND args "${acf_arg}")
    endif()
    list(JOIN args " " shown)
    if(shown STREQUAL "")
      set(shown "compiler defaults")
    endif()
    set(text "pinned controls from ${arg_PIN_FILE}: ${shown}")
    if("${${in}_architectures}" STREQUAL "")
      _ciq_rules_message(anywhere any_architecture)
      string(APPEND text " (${anywhere})")
    endif()
  else()
    # Per -gencode: the shared -D parameters in the options file, each
    # architecture's own arguments through the gencode launcher.
    set(args "${${in}_defines}")
    set(gencode "${${in}_applied}")
    set(shown "")
    foreach(arch IN LISTS gencode)
      list(JOIN device_${arch} " " one)
      if(one STREQUAL "")
        set(one "compiler defaults")
      endif()
      list(APPEND shown "sm_${arch}: ${one}")
      set(${out}_gencode_${arch} "${device_${arch}}" PARENT_SCOPE)
    endforeach()
    list(JOIN shown "; " shown)
    list(JOIN args " " all)
    if(NOT all STREQUAL "")
      string(APPEND shown "; all: ${all}")
    endif()
    set(text "pinned controls per architecture from ${arg_PIN_FILE}: ${shown}")
  endif()
  set(${out}_args "${args}" PARENT_SCOPE)
  set(${out}_depends "${depends}" PARENT_SCOPE)
  set(${out}_gencode "${gencode}" PARENT_SCOPE)
  set(${out}_message "${text}" PARENT_SCOPE)
endfunction()

# _ciq_acf_argument(<out> <target> <pin_file> <acf_path> <acf_kind> <binary_dir>)
# The nvcc argument that applies the ACF. nvcc passes it to ptxas through a
# shell, so a path with anything but the rule book's nvcc_path characters is
# used through a copy in the build tree (ciq_build/pin/apply.py does the same for Python builds).
function(_ciq_acf_argument out target pin_file acf_path acf_kind binary_dir)
  _ciq_rules_matches(plain nvcc_path "${acf_path}")
  if(NOT plain)
    set(copy "${binary_dir}/${target}.acf")
    _ciq_rules_matches(plain nvcc_path "${copy}")
    if(NOT plain)
      _ciq_pin_error(${target} "${pin_file}" "neither ${acf_path} nor the build "
        "tree (${binary_dir}) has a path nvcc can pass to ptxas (only letters, "
        "digits and _ . / + : @ % = -). Use a build directory with a plain path.")
      _ciq_pin_stop()
    endif()
    configure_file("${acf_path}" "${copy}" COPYONLY)
    set(acf_path "${copy}")
  endif()
  if(acf_kind STREQUAL "ptxas")
    set(${out} "-Xptxas=--apply-controls=${acf_path}" PARENT_SCOPE)
  else()
    set(${out} "--apply-controls=${acf_path}" PARENT_SCOPE)
  endif()
endfunction()
