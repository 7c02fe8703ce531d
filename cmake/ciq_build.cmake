# ciq_tune_target(): register a CUDA target for compiler tuning and apply its
# pinned compiler controls.
#
# One mechanism serves the real build and the tuning build: every tuned
# target's CUDA compiles get `--options-file=<file>`, and that file is listed
# in the OBJECT_DEPENDS of the target's CUDA sources, so a change rebuilds
# exactly those objects.
#
#   real build    <CMAKE_CURRENT_BINARY_DIR>/ciq/<target>.nvcc-options, written
#                 here from the validated pinned record (empty without one)
#   tuning build  -DCIQ_TUNE_TARGET=<target> -DCIQ_TUNE_OPTIONS_FILE=<file>:
#                 the driver rewrites <file> for every candidate
#
# Cache variables read: CIQ_DISABLE (ignore every pin), CIQ_STRICT (a toolkit
# mismatch is an error, not a warning), CIQ_TUNE_TARGET, CIQ_TUNE_OPTIONS_FILE.
#
# Properties set on each tuned target (read them, never set them):
#   CIQ_PIN_STATUS      applied | none | disabled | skipped | tuning
#   CIQ_PIN_FILE        the pinned record consulted
#   CIQ_NVCC_ARGUMENTS  the arguments written to the options file
#   CIQ_OPTIONS_FILE    the options file the target's CUDA compiles read

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

# Flags that change floating-point results; a pin may carry them only when the
# target opted in with ALLOW_NUMERICS (mirrors the allow-list's numerics block).
set_property(GLOBAL PROPERTY CIQ_BUILD_NUMERICS_REGEX
  "^(--use_fast_math|-ftz=.*|-prec-div=.*|-prec-sqrt=.*|-fmad=.*)$")

# ---------------------------------------------------------------------------
# Small helpers
# ---------------------------------------------------------------------------

# _ciq_json_string(<out> <value>): <value> as a quoted JSON string.
function(_ciq_json_string out value)
  string(REPLACE "\\" "\\\\" value "${value}")
  string(REPLACE "\"" "\\\"" value "${value}")
  string(REPLACE "\n" "\\n" value "${value}")
  string(REPLACE "\r" "\\r" value "${value}")
  string(REPLACE "\t" "\\t" value "${value}")
  # The remaining control characters are rare in CMake strings; \u00XX them.
  foreach(code RANGE 1 31)
    if(code EQUAL 9 OR code EQUAL 10 OR code EQUAL 13)
      continue()
    endif()
    string(ASCII ${code} char)
    string(FIND "${value}" "${char}" position)
    if(NOT position EQUAL -1)
      math(EXPR hex "${code}" OUTPUT_FORMAT HEXADECIMAL)
      string(REGEX REPLACE "^0x" "" hex "${hex}")
      string(LENGTH "${hex}" length)
      if(length EQUAL 1)
        set(hex "0${hex}")
      endif()
      string(REPLACE "${char}" "\\u00${hex}" value "${value}")
    endif()
  endforeach()
  set(${out} "\"${value}\"" PARENT_SCOPE)
endfunction()

# _ciq_json_array(<out> [<item>...]): the items as a JSON array of strings.
function(_ciq_json_array out)
  set(items "")
  foreach(item IN LISTS ARGN)
    _ciq_json_string(quoted "${item}")
    list(APPEND items "${quoted}")
  endforeach()
  list(JOIN items ", " joined)
  set(${out} "[${joined}]" PARENT_SCOPE)
endfunction()

# _ciq_genex_literal(<out> <text>): <text> protected from generator-expression
# evaluation in file(GENERATE), by spelling every '$' as $<1:$>.
function(_ciq_genex_literal out text)
  string(REPLACE "$" "$<1:$>" text "${text}")
  set(${out} "${text}" PARENT_SCOPE)
endfunction()

# _ciq_options_arg(<out> <arg>): one options-file line. nvcc splits the file
# at whitespace, so an argument with whitespace or quotes is double-quoted.
function(_ciq_options_arg out arg)
  if(arg MATCHES "[ \t\"\\\\]")
    string(REPLACE "\\" "\\\\" arg "${arg}")
    string(REPLACE "\"" "\\\"" arg "${arg}")
    set(arg "\"${arg}\"")
  endif()
  set(${out} "${arg}" PARENT_SCOPE)
endfunction()

# _ciq_write_if_changed(<file> <content>): leave an unchanged file untouched,
# so its mtime does not trigger rebuilds of the objects that depend on it.
function(_ciq_write_if_changed file content)
  if(EXISTS "${file}")
    file(READ "${file}" old)
    if(old STREQUAL content)
      return()
    endif()
  endif()
  file(WRITE "${file}" "${content}")
endfunction()

# _ciq_read_allowlist(<out>): the allow-list regexes, one per line.
function(_ciq_read_allowlist out)
  get_property(dir GLOBAL PROPERTY CIQ_BUILD_CMAKE_DIR)
  set(file "${dir}/ciq_build_allowlist.txt")
  if(NOT EXISTS "${file}")
    message(FATAL_ERROR
      "ciq_tune_target: the allow-list ${file} is missing; reinstall ciq_build.")
  endif()
  file(STRINGS "${file}" lines)
  set(regexes "")
  foreach(line IN LISTS lines)
    string(STRIP "${line}" line)
    if(line STREQUAL "" OR line MATCHES "^#")
      continue()
    endif()
    list(APPEND regexes "${line}")
  endforeach()
  set(${out} "${regexes}" PARENT_SCOPE)
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS "${file}")
endfunction()

# _ciq_pin_error(<target> <pin_file> <message>...): refuse a pinned record.
function(_ciq_pin_error target pin_file)
  string(JOIN "" text ${ARGN})
  message(FATAL_ERROR "ciq_tune_target(${target}): refusing the pinned record "
    "${pin_file}: ${text}")
endfunction()

# _ciq_json_type(<out> <json> <path>...): the JSON type at <path>, or MISSING.
function(_ciq_json_type out json)
  string(JSON type ERROR_VARIABLE error TYPE "${json}" ${ARGN})
  if(error)
    set(type MISSING)
  endif()
  set(${out} "${type}" PARENT_SCOPE)
endfunction()

# _ciq_check_flag(<target> <pin_file> <flag> <allow_numerics> <regexes>...)
function(_ciq_check_flag target pin_file flag allow_numerics)
  get_property(numerics GLOBAL PROPERTY CIQ_BUILD_NUMERICS_REGEX)
  if(flag MATCHES "^(-Xptxas=)?--?apply-controls")
    _ciq_pin_error(${target} "${pin_file}" "flag '${flag}': an ACF belongs in "
      "controls.acf, never in controls.flags. Retune, or remove the flag.")
  endif()
  set(allowed FALSE)
  foreach(regex IN LISTS ARGN)
    if(flag MATCHES "^(${regex})$")
      set(allowed TRUE)
      break()
    endif()
  endforeach()
  if(NOT allowed)
    _ciq_pin_error(${target} "${pin_file}" "flag '${flag}' is not in the "
      "ciq_build allow-list (pinned flags may not run programs, read files or "
      "name paths). Remove it from the record, or retune with "
      "`python -m ciq_build tune ${target}`.")
  endif()
  if(flag MATCHES "${numerics}" AND NOT allow_numerics)
    _ciq_pin_error(${target} "${pin_file}" "flag '${flag}' changes floating-point "
      "results, and ciq_tune_target(${target}) does not say ALLOW_NUMERICS. "
      "Add ALLOW_NUMERICS, or retune without numerics flags.")
  endif()
endfunction()

# _ciq_read_pin(<target> <pin_file> <pin_dir> <binary_dir> <allow_numerics>)
# Validates a pinned record and sets, in the caller:
#   _ciq_pin_args      the nvcc arguments it asks for
#   _ciq_pin_depends   files whose change must rebuild (record, ACF, ACF copy)
#   _ciq_pin_acf_kind  "", "ptxas" or "nvcc"
#   _ciq_pin_cuda      the record's toolchain.cuda (major.minor)
function(_ciq_read_pin target pin_file pin_dir binary_dir allow_numerics)
  file(READ "${pin_file}" json)
  string(JSON schema ERROR_VARIABLE error GET "${json}" schema)
  if(error)
    _ciq_pin_error(${target} "${pin_file}" "it is not a JSON object with a "
      "\"schema\" member (${error}). Restore it from version control or retune.")
  endif()
  if(NOT schema STREQUAL "1")
    _ciq_pin_error(${target} "${pin_file}" "schema is ${schema}, this ciq_build "
      "reads schema 1. Upgrade ciq_build, or retune with "
      "`python -m ciq_build tune ${target}`.")
  endif()
  string(JSON record_target ERROR_VARIABLE error GET "${json}" target)
  if(error OR NOT record_target STREQUAL target)
    _ciq_pin_error(${target} "${pin_file}" "its \"target\" is "
      "'${record_target}', not '${target}'. Was it copied from another target? "
      "Retune this one.")
  endif()

  set(args "")

  # Public compiler flags: each must match the allow-list.
  _ciq_json_type(type "${json}" controls flags)
  if(type STREQUAL "ARRAY")
    _ciq_read_allowlist(regexes)
    string(JSON count LENGTH "${json}" controls flags)
    if(count GREATER 0)
      math(EXPR last "${count} - 1")
      foreach(index RANGE ${last})
        _ciq_json_type(item_type "${json}" controls flags ${index})
        if(NOT item_type STREQUAL "STRING")
          _ciq_pin_error(${target} "${pin_file}" "controls.flags[${index}] is "
            "not a string.")
        endif()
        string(JSON flag GET "${json}" controls flags ${index})
        _ciq_check_flag(${target} "${pin_file}" "${flag}" ${allow_numerics}
          ${regexes})
        list(APPEND args "${flag}")
      endforeach()
    endif()
  elseif(NOT type MATCHES "^(MISSING|NULL)$")
    _ciq_pin_error(${target} "${pin_file}" "controls.flags is not an array.")
  endif()

  # User source parameters: -DNAME=VALUE with a conservative character set
  # (nvcc hands them to its sub-tools through a shell).
  _ciq_json_type(type "${json}" controls defines)
  if(type STREQUAL "OBJECT")
    string(JSON count LENGTH "${json}" controls defines)
    if(count GREATER 0)
      math(EXPR last "${count} - 1")
      set(defines "")
      foreach(index RANGE ${last})
        string(JSON name MEMBER "${json}" controls defines ${index})
        _ciq_json_type(value_type "${json}" controls defines "${name}")
        if(NOT value_type MATCHES "^(STRING|NUMBER)$")
          _ciq_pin_error(${target} "${pin_file}" "controls.defines.${name} is "
            "not a string.")
        endif()
        string(JSON value GET "${json}" controls defines "${name}")
        if(NOT name MATCHES "^[A-Za-z_][A-Za-z0-9_]*$")
          _ciq_pin_error(${target} "${pin_file}" "define name '${name}' is not a "
            "C identifier.")
        endif()
        if(NOT value MATCHES "^[A-Za-z0-9_.+-]*$")
          _ciq_pin_error(${target} "${pin_file}" "define ${name}='${value}' may "
            "only use letters, digits and _ . + -")
        endif()
        list(APPEND defines "-D${name}=${value}")
      endforeach()
      # Sorted, so that member order in the file cannot change the options.
      list(SORT defines)
      list(APPEND args ${defines})
    endif()
  elseif(NOT type MATCHES "^(MISSING|NULL)$")
    _ciq_pin_error(${target} "${pin_file}" "controls.defines is not an object.")
  endif()

  # The Advanced Controls File: a bare file name inside the pin dir, with the
  # sha256 it was measured with.
  set(depends "${pin_file}")
  set(acf_kind "")
  _ciq_json_type(type "${json}" controls acf)
  if(type STREQUAL "OBJECT")
    string(JSON acf_name ERROR_VARIABLE error GET "${json}" controls acf file)
    string(JSON acf_sha ERROR_VARIABLE error2 GET "${json}" controls acf sha256)
    string(JSON acf_kind ERROR_VARIABLE error3 GET "${json}" controls acf compiler)
    if(error OR error2 OR error3)
      _ciq_pin_error(${target} "${pin_file}" "controls.acf needs \"file\", "
        "\"sha256\" and \"compiler\".")
    endif()
    # Strict: nvcc passes the ACF path to ptxas through a shell.
    if(NOT acf_name MATCHES "^[A-Za-z0-9_][A-Za-z0-9_.+-]*$" OR acf_name MATCHES "\\.\\.")
      _ciq_pin_error(${target} "${pin_file}" "controls.acf.file '${acf_name}' must "
        "be a plain file name inside ${pin_dir} (letters, digits, _ . + -; no "
        "path separators, no '..').")
    endif()
    if(NOT acf_kind MATCHES "^(ptxas|nvcc)$")
      _ciq_pin_error(${target} "${pin_file}" "controls.acf.compiler is "
        "'${acf_kind}'; it must be \"ptxas\" or \"nvcc\".")
    endif()
    set(acf_path "${pin_dir}/${acf_name}")
    if(NOT EXISTS "${acf_path}")
      _ciq_pin_error(${target} "${pin_file}" "its ACF ${acf_path} does not exist. "
        "Restore the file from version control, or retune with "
        "`python -m ciq_build tune ${target}`.")
    endif()
    file(SHA256 "${acf_path}" actual_sha)
    string(TOLOWER "${acf_sha}" acf_sha)
    if(NOT actual_sha STREQUAL acf_sha)
      _ciq_pin_error(${target} "${pin_file}" "the sha256 of ${acf_path} is "
        "${actual_sha}, the record says ${acf_sha}: the ACF is not the one that "
        "was measured. Restore the file from version control, or retune with "
        "`python -m ciq_build tune ${target}`.")
    endif()
    list(APPEND depends "${acf_path}")
    # nvcc runs ptxas through a shell that splits the path at whitespace (and
    # would interpret shell characters), so a path outside a plain character
    # set is used through a copy in the build tree.
    if(NOT acf_path MATCHES "^[A-Za-z0-9_./+:@%=-]+$")
      set(copy "${binary_dir}/ciq/${target}.acf")
      if(NOT copy MATCHES "^[A-Za-z0-9_./+:@%=-]+$")
        _ciq_pin_error(${target} "${pin_file}" "neither ${acf_path} nor the build "
          "tree (${binary_dir}) has a path nvcc can pass to ptxas (no spaces or "
          "shell characters). Use a build directory with a plain path.")
      endif()
      configure_file("${acf_path}" "${copy}" COPYONLY)
      set(acf_path "${copy}")
      list(APPEND depends "${copy}")
    endif()
    if(acf_kind STREQUAL "ptxas")
      list(APPEND args "-Xptxas=--apply-controls=${acf_path}")
    else()
      list(APPEND args "--apply-controls=${acf_path}")
    endif()
  elseif(NOT type MATCHES "^(MISSING|NULL)$")
    _ciq_pin_error(${target} "${pin_file}" "controls.acf is not an object.")
  endif()

  string(JSON cuda ERROR_VARIABLE error GET "${json}" toolchain cuda)
  if(error OR NOT cuda MATCHES "^[0-9]+\\.[0-9]+$")
    _ciq_pin_error(${target} "${pin_file}" "toolchain.cuda must be the CUDA "
      "major.minor it was tuned with (e.g. \"13.3\"). Retune with "
      "`python -m ciq_build tune ${target}`.")
  endif()

  set(_ciq_pin_args "${args}" PARENT_SCOPE)
  set(_ciq_pin_depends "${depends}" PARENT_SCOPE)
  set(_ciq_pin_acf_kind "${acf_kind}" PARENT_SCOPE)
  set(_ciq_pin_cuda "${cuda}" PARENT_SCOPE)
endfunction()

# ---------------------------------------------------------------------------
# Public function
# ---------------------------------------------------------------------------

#[=======================================================================[
ciq_tune_target(<target>
                [BENCHMARK <exe-target> [ARGS <arg>...]]
                [METRIC <regex>]
                [OBJECTIVES <objective>...]
                [PARAMS <NAME=space>...]
                [SEARCH_SPACE <space>...]
                [PIN_DIR <dir>]
                [TIMEOUT <seconds>]
                [ALLOW_NUMERICS])

Registers <target> (a library or executable with CUDA sources) for
`python -m ciq_build tune <target>` and applies its pinned record
<PIN_DIR>/<target>.json (default PIN_DIR: ${CMAKE_CURRENT_SOURCE_DIR}/ciq).
#]=======================================================================]
function(ciq_tune_target target)
  cmake_parse_arguments(PARSE_ARGV 1 ARG
    # Options
    "ALLOW_NUMERICS"       # the search may change floating-point results
    # One-value keywords
    "BENCHMARK;METRIC;PIN_DIR;TIMEOUT"
    # Multi-value keywords
    "ARGS;OBJECTIVES;PARAMS;SEARCH_SPACE")
  set(fn "ciq_tune_target(${target})")

  if(ARG_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "${fn}: unknown arguments '${ARG_UNPARSED_ARGUMENTS}'. "
      "Keywords are BENCHMARK, ARGS, METRIC, OBJECTIVES, PARAMS, SEARCH_SPACE, "
      "PIN_DIR, TIMEOUT and ALLOW_NUMERICS.")
  endif()
  foreach(keyword IN ITEMS BENCHMARK METRIC PIN_DIR TIMEOUT)
    if(keyword IN_LIST ARG_KEYWORDS_MISSING_VALUES)
      message(FATAL_ERROR "${fn}: ${keyword} needs a value.")
    endif()
  endforeach()
  if(NOT TARGET "${target}")
    message(FATAL_ERROR "${fn}: there is no target '${target}'. Call "
      "ciq_tune_target() after add_library()/add_executable() of that target.")
  endif()
  get_target_property(aliased "${target}" ALIASED_TARGET)
  if(aliased)
    message(FATAL_ERROR "${fn}: '${target}' is an alias; pass the real target "
      "'${aliased}'.")
  endif()
  get_target_property(imported "${target}" IMPORTED)
  get_target_property(type "${target}" TYPE)
  if(imported OR NOT type MATCHES "^(STATIC_LIBRARY|SHARED_LIBRARY|MODULE_LIBRARY|OBJECT_LIBRARY|EXECUTABLE)$")
    if(imported)
      set(type "an imported ${type}")
    endif()
    message(FATAL_ERROR "${fn}: '${target}' is ${type}; only a library or "
      "executable built here from CUDA sources can be tuned.")
  endif()
  if(ARG_ARGS AND NOT ARG_BENCHMARK)
    message(FATAL_ERROR "${fn}: ARGS are the benchmark's arguments; give "
      "BENCHMARK <exe-target> too.")
  endif()
  if("time" IN_LIST ARG_OBJECTIVES AND NOT ARG_BENCHMARK AND NOT ARG_METRIC)
    message(FATAL_ERROR "${fn}: OBJECTIVES time needs a BENCHMARK to run; add "
      "BENCHMARK <exe-target>, or use a static objective such as spill_bytes.")
  endif()
  if(NOT DEFINED ARG_TIMEOUT)
    set(ARG_TIMEOUT 60)
  elseif(NOT ARG_TIMEOUT MATCHES "^[0-9]+(\\.[0-9]+)?$" OR ARG_TIMEOUT EQUAL 0)
    message(FATAL_ERROR "${fn}: TIMEOUT '${ARG_TIMEOUT}' must be a positive "
      "number of seconds.")
  endif()
  if(NOT CMAKE_CUDA_COMPILER_VERSION)
    message(FATAL_ERROR "${fn}: CUDA is not enabled here. Add CUDA to project() "
      "or call enable_language(CUDA) before ciq_tune_target().")
  endif()
  if(NOT CMAKE_GENERATOR MATCHES "^(Ninja|Unix Makefiles)$")
    message(WARNING "${fn}: the ${CMAKE_GENERATOR} generator is not supported "
      "by `python -m ciq_build tune`; pins are applied, but tune from a Ninja "
      "or Unix Makefiles build tree.")
  endif()

  get_property(registered GLOBAL PROPERTY CIQ_BUILD_TARGETS)
  if(target IN_LIST registered)
    message(FATAL_ERROR "${fn}: called twice for the same target; merge the "
      "calls.")
  endif()

  if(DEFINED ARG_PIN_DIR)
    cmake_path(ABSOLUTE_PATH ARG_PIN_DIR BASE_DIRECTORY "${CMAKE_CURRENT_SOURCE_DIR}"
      NORMALIZE OUTPUT_VARIABLE pin_dir)
  else()
    set(pin_dir "${CMAKE_CURRENT_SOURCE_DIR}/ciq")
  endif()
  string(REGEX REPLACE "/$" "" pin_dir "${pin_dir}")
  set(pin_file "${pin_dir}/${target}.json")
  set(options_file "${CMAKE_CURRENT_BINARY_DIR}/ciq/${target}.nvcc-options")
  string(REGEX MATCH "^[0-9]+\\.[0-9]+" cuda_version "${CMAKE_CUDA_COMPILER_VERSION}")

  set(args "")
  set(depends "")
  set(acf_kind "")
  if(CIQ_TUNE_TARGET STREQUAL target AND NOT "${CIQ_TUNE_OPTIONS_FILE}" STREQUAL "")
    # Tuning build: the driver owns the options file; the pin is not read.
    cmake_path(ABSOLUTE_PATH CIQ_TUNE_OPTIONS_FILE BASE_DIRECTORY "${CMAKE_BINARY_DIR}"
      NORMALIZE OUTPUT_VARIABLE options_file)
    if(NOT EXISTS "${options_file}")
      file(WRITE "${options_file}" "")  # creates its folder too
    endif()
    set(status tuning)
    message(STATUS "ciq_build: ${target}: tuning build, controls from ${options_file}")
  else()
    if(CIQ_TUNE_TARGET STREQUAL target)
      message(FATAL_ERROR "${fn}: CIQ_TUNE_TARGET is ${target} but "
        "CIQ_TUNE_OPTIONS_FILE is not set; a tuning build needs both.")
    endif()
    if(CIQ_DISABLE)
      set(status disabled)
      message(STATUS "ciq_build: ${target}: pins disabled (CIQ_DISABLE=ON)")
    elseif(NOT EXISTS "${pin_file}")
      set(status none)
      message(STATUS "ciq_build: ${target}: no pinned controls (${pin_file})")
    else()
      _ciq_read_pin(${target} "${pin_file}" "${pin_dir}" "${CMAKE_CURRENT_BINARY_DIR}"
        "${ARG_ALLOW_NUMERICS}")
      set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${_ciq_pin_depends})
      if(NOT _ciq_pin_cuda STREQUAL cuda_version)
        set(text "${fn}: the pinned record ${pin_file} was tuned with CUDA "
          "${_ciq_pin_cuda}, but this build compiles with CUDA "
          "${CMAKE_CUDA_COMPILER_VERSION} (${CMAKE_CUDA_COMPILER}). Build with "
          "CUDA ${_ciq_pin_cuda} (-DCMAKE_CUDA_COMPILER=...), or retune with "
          "`python -m ciq_build tune ${target}`.")
        if(CIQ_STRICT)
          string(JOIN "" text ${text} " (CIQ_STRICT=ON makes this an error.)")
          message(FATAL_ERROR "${text}")
        endif()
        string(JOIN "" text ${text} " The pin is skipped for this build.")
        message(WARNING "${text}")
        set(status skipped)
        message(STATUS "ciq_build: ${target}: pin skipped (tuned with CUDA "
          "${_ciq_pin_cuda}, compiling with ${cuda_version}): ${pin_file}")
      else()
        set(status applied)
        set(args "${_ciq_pin_args}")
        set(depends "${_ciq_pin_depends}")
        set(acf_kind "${_ciq_pin_acf_kind}")
        list(JOIN args " " shown)
        if(shown STREQUAL "")
          set(shown "compiler defaults")
        endif()
        message(STATUS "ciq_build: ${target}: pinned controls from ${pin_file}: ${shown}")
      endif()
    endif()
    set(lines "")
    foreach(arg IN LISTS args)
      _ciq_options_arg(line "${arg}")
      string(APPEND lines "${line}\n")
    endforeach()
    _ciq_write_if_changed("${options_file}" "${lines}")
  endif()
  # A pin that appears later in an existing pin dir (after a tune) must
  # reconfigure: a directory's mtime changes when files are added or removed.
  if(IS_DIRECTORY "${pin_dir}")
    set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS "${pin_dir}")
  endif()

  target_compile_options(${target} PRIVATE
    "$<$<COMPILE_LANGUAGE:CUDA>:--options-file=${options_file}>")

  set_target_properties(${target} PROPERTIES
    CIQ_PIN_STATUS "${status}"
    CIQ_PIN_FILE "${pin_file}"
    CIQ_NVCC_ARGUMENTS "${args}"
    CIQ_OPTIONS_FILE "${options_file}"
    # Read by the deferred finalisation below.
    _CIQ_OBJECT_DEPENDS "${options_file};${depends}"
    _CIQ_ACF_KIND "${acf_kind}"
    _CIQ_BENCHMARK "${ARG_BENCHMARK}"
    _CIQ_ARGS "${ARG_ARGS}"
    _CIQ_METRIC "${ARG_METRIC}"
    _CIQ_OBJECTIVES "${ARG_OBJECTIVES}"
    _CIQ_PARAMS "${ARG_PARAMS}"
    _CIQ_SEARCH_SPACE "${ARG_SEARCH_SPACE}"
    _CIQ_PIN_DIR "${pin_dir}"
    _CIQ_TIMEOUT "${ARG_TIMEOUT}"
    _CIQ_ALLOW_NUMERICS "${ARG_ALLOW_NUMERICS}"
    _CIQ_CUDA_COMPILER "${CMAKE_CUDA_COMPILER}"
    _CIQ_CUDA_COMPILER_VERSION "${CMAKE_CUDA_COMPILER_VERSION}")

  # Sources, CUDA_ARCHITECTURES and the benchmark target may still be added
  # or changed after this call: finish at the end of the top-level directory.
  set_property(GLOBAL APPEND PROPERTY CIQ_BUILD_TARGETS "${target}")
  # DEFER evaluates variable references when the call runs, not now: pass the
  # target's name literally.
  cmake_language(EVAL CODE
    "cmake_language(DEFER DIRECTORY \"\${CMAKE_SOURCE_DIR}\" CALL _ciq_finalize_target [==[${target}]==])")
  get_property(checked GLOBAL PROPERTY _CIQ_BUILD_CHECK_DEFERRED)
  if(NOT checked)
    set_property(GLOBAL PROPERTY _CIQ_BUILD_CHECK_DEFERRED TRUE)
    cmake_language(DEFER DIRECTORY "${CMAKE_SOURCE_DIR}" CALL _ciq_check_tune_target)
  endif()
endfunction()

# ---------------------------------------------------------------------------
# Deferred steps (end of the top-level CMakeLists.txt)
# ---------------------------------------------------------------------------

# _ciq_cuda_sources(<out> <target>): absolute paths of the target's CUDA sources.
function(_ciq_cuda_sources out target)
  get_target_property(sources ${target} SOURCES)
  get_target_property(source_dir ${target} SOURCE_DIR)
  get_target_property(binary_dir ${target} BINARY_DIR)
  set(result "")
  foreach(source IN LISTS sources)
    if(source MATCHES "\\$<")
      continue()  # $<TARGET_OBJECTS:...> and other generator expressions
    endif()
    get_property(language SOURCE "${source}" TARGET_DIRECTORY ${target} PROPERTY LANGUAGE)
    if(language STREQUAL "")
      get_filename_component(extension "${source}" LAST_EXT)
      string(TOLOWER "${extension}" extension)
      if(extension STREQUAL ".cu")
        set(language CUDA)
      endif()
    endif()
    if(NOT language STREQUAL "CUDA")
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

function(_ciq_finalize_target target)
  set(fn "ciq_tune_target(${target})")
  _ciq_cuda_sources(sources ${target})
  if(sources STREQUAL "")
    message(FATAL_ERROR "${fn}: '${target}' has no CUDA sources (.cu files or "
      "sources with LANGUAGE CUDA); tune the target that compiles your kernels.")
  endif()

  get_target_property(architectures ${target} CUDA_ARCHITECTURES)
  if(NOT architectures)
    set(architectures "")
  endif()
  get_target_property(acf_kind ${target} _CIQ_ACF_KIND)
  if(acf_kind STREQUAL "nvcc")
    if(architectures STREQUAL "")
      set(architectures "(nvcc's default)")  # below sm_100
    endif()
    foreach(arch IN LISTS architectures)
      string(REGEX MATCH "^[0-9]+" number "${arch}")
      if(number STREQUAL "" OR number LESS 100)
        message(FATAL_ERROR "${fn}: the pinned ACF is an nvcc ACF, which nvcc "
          "accepts only for sm_100 and newer, but CUDA_ARCHITECTURES is "
          "'${architectures}'. Retune and use the ptxas search space (a ptxas "
          "ACF works for every architecture), or build for sm_100 and newer only.")
      endif()
    endforeach()
  endif()

  get_target_property(object_depends ${target} _CIQ_OBJECT_DEPENDS)
  foreach(source IN LISTS sources)
    set_property(SOURCE "${source}" TARGET_DIRECTORY ${target} APPEND
      PROPERTY OBJECT_DEPENDS ${object_depends})
  endforeach()

  get_target_property(benchmark ${target} _CIQ_BENCHMARK)
  if(benchmark)
    if(NOT TARGET "${benchmark}")
      message(FATAL_ERROR "${fn}: BENCHMARK '${benchmark}' is not a target; "
        "name the add_executable() target of your benchmark.")
    endif()
    get_target_property(benchmark_type "${benchmark}" TYPE)
    if(NOT benchmark_type STREQUAL "EXECUTABLE")
      message(FATAL_ERROR "${fn}: BENCHMARK '${benchmark}' is a "
        "${benchmark_type}; it must be an executable.")
    endif()
    get_target_property(benchmark_dir "${benchmark}" BINARY_DIR)
    if("${CMAKE_BINARY_DIR};${benchmark_dir}" MATCHES "[\"\\\\]")
      message(FATAL_ERROR "${fn}: the build directory path contains a quote or "
        "backslash; use a plain path.")
    endif()
    get_target_property(benchmark_args ${target} _CIQ_ARGS)
    _ciq_json_string(benchmark_name "${benchmark}")
    _ciq_json_array(benchmark_args ${benchmark_args})
    set(benchmark_json "{\"target\": ${benchmark_name}, \"path\": \"@CIQ_BENCHMARK_PATH@\", \"args\": ${benchmark_args}}")
  else()
    set(benchmark_json "null")
  endif()

  get_target_property(source_dir ${target} SOURCE_DIR)
  get_target_property(binary_dir ${target} BINARY_DIR)
  foreach(property IN ITEMS METRIC PIN_DIR OPTIONS_FILE)
    if(property STREQUAL "OPTIONS_FILE")
      get_target_property(value ${target} CIQ_OPTIONS_FILE)
    else()
      get_target_property(value ${target} _CIQ_${property})
    endif()
    _ciq_json_string(json_${property} "${value}")
  endforeach()
  foreach(property IN ITEMS OBJECTIVES PARAMS SEARCH_SPACE)
    get_target_property(value ${target} _CIQ_${property})
    _ciq_json_array(json_${property} ${value})
  endforeach()
  get_target_property(timeout ${target} _CIQ_TIMEOUT)
  get_target_property(allow_numerics ${target} _CIQ_ALLOW_NUMERICS)
  if(allow_numerics)
    set(allow_numerics true)
  else()
    set(allow_numerics false)
  endif()
  get_target_property(pin_file ${target} CIQ_PIN_FILE)
  get_target_property(compiler ${target} _CIQ_CUDA_COMPILER)
  get_target_property(compiler_version ${target} _CIQ_CUDA_COMPILER_VERSION)
  foreach(name IN ITEMS target CMAKE_SOURCE_DIR CMAKE_BINARY_DIR source_dir binary_dir
      pin_file CMAKE_GENERATOR compiler compiler_version architectures)
    _ciq_json_string(json_${name} "${${name}}")
  endforeach()
  _ciq_json_array(json_sources ${sources})
  _ciq_json_string(json_object_dir "${binary_dir}/CMakeFiles/${target}.dir")

  string(JOIN "\n" manifest
    "{"
    "  \"schema\": 1,"
    "  \"target\": ${json_target},"
    "  \"source_dir\": ${json_CMAKE_SOURCE_DIR},"
    "  \"binary_dir\": ${json_CMAKE_BINARY_DIR},"
    "  \"target_source_dir\": ${json_source_dir},"
    "  \"target_binary_dir\": ${json_binary_dir},"
    "  \"cuda_sources\": ${json_sources},"
    "  \"object_dir\": ${json_object_dir},"
    "  \"benchmark\": ${benchmark_json},"
    "  \"metric_regex\": ${json_METRIC},"
    "  \"objectives\": ${json_OBJECTIVES},"
    "  \"params\": ${json_PARAMS},"
    "  \"search_space\": ${json_SEARCH_SPACE},"
    "  \"pin_dir\": ${json_PIN_DIR},"
    "  \"pin_file\": ${json_pin_file},"
    "  \"timeout\": ${timeout},"
    "  \"options_file\": ${json_OPTIONS_FILE},"
    "  \"generator\": ${json_CMAKE_GENERATOR},"
    "  \"allow_numerics\": ${allow_numerics},"
    "  \"toolchain\": {\"cuda_compiler\": ${json_compiler}, \"cuda_compiler_version\": ${json_compiler_version}, \"architectures\": ${json_architectures}}"
    "}"
    "")
  # Everything is literal text except the benchmark's path, known only at
  # generate time.
  _ciq_genex_literal(manifest "${manifest}")
  if(benchmark)
    string(REPLACE "@CIQ_BENCHMARK_PATH@" "$<TARGET_FILE:${benchmark}>" manifest "${manifest}")
  endif()
  file(GENERATE OUTPUT "${CMAKE_BINARY_DIR}/ciq/targets/${target}.json"
    CONTENT "${manifest}")
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

cmake_policy(POP)
