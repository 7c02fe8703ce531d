# ciq_build's CMake module, part: the target's manifest (see ciq_build.cmake, which includes it).
#
# _ciq_write_manifest(TARGET <target> SOURCES <source>... [ARCHITECTURES <arch>...] ARCHITECTURES_DEFAULT <true|false>
#                     ARCHITECTURES_UNREAD <why, or "">)
#   Writes <CMAKE_BINARY_DIR>/ciq/targets/<target>.json at generate time (file(GENERATE)): what the
#   tuning driver reads of a registered target (ciq_build/project/manifest.py reads it; its JSON Schema
#   is docs/target-manifest.schema.json), from the properties ciq_tune_target() set and the CUDA
#   sources and architectures _ciq_finalize_target() found, the target's other (host) sources and its benchmark's
#   own sources (_ciq_compiled_sources); and beside it the target's own nvcc flags
#   (_ciq_write_cuda_flags).
#
# Separate because it is the module's one interface to the Python driver, a JSON document whose fields
# change with the driver's manifest, not with how a call is checked or a pin applied; and it owns the
# module's JSON writing (_ciq_json_string, _ciq_json_array) and the generator-expression escaping.

include_guard(GLOBAL)

# _ciq_drop_stale_manifests(): the manifests of targets no ciq_tune_target() call registers any more (a call
# removed or renamed), removed at the end of the configure: `list` still showed such a target, `tune` offered
# it and a tune of it failed deep in its scratch tree's CMake ("CIQ_TUNE_TARGET is 'x', which no
# ciq_tune_target() call registered"). Deferred by ciq_build.cmake once a configure, calls or none.
# A flags file of a configuration the tree no longer builds goes too (a single-configuration tree's earlier
# CMAKE_BUILD_TYPE, or the "<target>.cuda-flags-" an older ciq_build named the files of a tree without one):
# the driver reads the flags every file holds (ciq_build.project.manifest.read_cuda_flags), so a stale one
# would hide a flag the build now passes.
function(_ciq_drop_stale_manifests)
  get_property(registered GLOBAL PROPERTY CIQ_BUILD_TARGETS)
  _ciq_flags_configurations(configurations unused)
  file(GLOB manifests "${CMAKE_BINARY_DIR}/ciq/targets/*.json" "${CMAKE_BINARY_DIR}/ciq/targets/*.cuda-flags-*")
  foreach(manifest IN LISTS manifests)
    get_filename_component(name "${manifest}" NAME)
    set(built TRUE)
    if(name MATCHES "\\.cuda-flags-(.*)$")
      set(configuration "${CMAKE_MATCH_1}")
      if(NOT configuration IN_LIST configurations)
        set(built FALSE)
      endif()
    endif()
    string(REGEX REPLACE "(\\.json|\\.cuda-flags-.*)$" "" name "${name}")
    if(NOT name IN_LIST registered OR NOT built)
      file(REMOVE "${manifest}")
    endif()
  endforeach()
endfunction()

# _ciq_flags_configurations(<built> <genex>): the configurations this tree builds as its flags files name them
# (<built>, a list), and the generator expression of the one a file is generated for (<genex>). A
# single-configuration tree without CMAKE_BUILD_TYPE has an empty $<CONFIG>, and its files were named
# "<target>.cuda-flags-"; its configuration is named noconfig, CMake's own word for it (install(EXPORT)'s
# "<name>-noconfig.cmake").
function(_ciq_flags_configurations built genex)
  set(none noconfig)
  get_property(multi GLOBAL PROPERTY GENERATOR_IS_MULTI_CONFIG)
  if(multi)
    set(${built} "${CMAKE_CONFIGURATION_TYPES}" PARENT_SCOPE)
  elseif(CMAKE_BUILD_TYPE STREQUAL "")
    set(${built} ${none} PARENT_SCOPE)
  else()
    set(${built} "${CMAKE_BUILD_TYPE}" PARENT_SCOPE)
  endif()
  set(${genex} "$<IF:$<STREQUAL:$<CONFIG>,>,${none},$<CONFIG>>" PARENT_SCOPE)
endfunction()

function(_ciq_write_manifest)
  cmake_parse_arguments(PARSE_ARGV 0 arg "" "TARGET;ARCHITECTURES_DEFAULT;ARCHITECTURES_UNREAD"
    "SOURCES;ARCHITECTURES")
  set(target "${arg_TARGET}")
  set(sources "${arg_SOURCES}")
  set(architectures "${arg_ARCHITECTURES}")
  set(fn "ciq_tune_target(${target})")
  get_target_property(benchmark ${target} _CIQ_BENCHMARK)
  if(benchmark)
    get_target_property(benchmark_args ${target} _CIQ_ARGS)
    _ciq_json_string(benchmark_name "${benchmark}")
    _ciq_json_array(benchmark_args ${benchmark_args})
    # ARGS_SETS: each "name:arguments" as {"name", "args"}, the arguments split like a shell's.
    get_target_property(args_sets ${target} _CIQ_ARGS_SETS)
    get_target_property(score ${target} _CIQ_SCORE)
    if(NOT score)
      set(score geomean)
    endif()
    set(sets_json "")
    foreach(entry IN LISTS args_sets)
      string(FIND "${entry}" ":" colon)
      string(SUBSTRING "${entry}" 0 ${colon} size)
      math(EXPR rest "${colon} + 1")
      string(SUBSTRING "${entry}" ${rest} -1 size_args)
      separate_arguments(size_args UNIX_COMMAND "${size_args}")
      _ciq_json_array(size_args_json ${size_args})
      if(NOT sets_json STREQUAL "")
        string(APPEND sets_json ", ")
      endif()
      # Appended as text: a CMake list would split inside the JSON's [ ].
      string(APPEND sets_json "{\"name\": \"${size}\", \"args\": ${size_args_json}}")
    endforeach()
    # Its own sources, which a candidate's -D does not reach (the tuned target's CUDA sources, where it is the
    # tuned target, do): the driver reads them for the PARAMS names (ciq_build.tune.param_probe).
    _ciq_compiled_sources(benchmark_sources "${benchmark}" "C;CXX;OBJC;OBJCXX;HIP;CUDA" "")
    list(REMOVE_ITEM benchmark_sources ${sources})
    _ciq_json_array(benchmark_sources ${benchmark_sources})
    set(benchmark_json "{\"target\": ${benchmark_name}, \"path\": \"@CIQ_BENCHMARK_PATH@\", \"args\": ${benchmark_args}, \"args_sets\": [${sets_json}], \"score\": \"${score}\", \"sources\": ${benchmark_sources}}")
  else()
    set(benchmark_json "null")
  endif()

  get_target_property(source_dir ${target} SOURCE_DIR)
  get_target_property(binary_dir ${target} BINARY_DIR)
  # The benchmark's path and the object paths go into the manifest's JSON at
  # generate time, unescaped: the build tree's path must need no escaping.
  if("${CMAKE_BINARY_DIR};${binary_dir}" MATCHES "[\"\\\\]")
    message(FATAL_ERROR "${fn}: the build directory path contains a quote or "
      "backslash; use a plain path.")
  endif()
  foreach(property IN ITEMS METRIC METRIC_UNIT PIN_DIR OPTIONS_FILE DESCRIPTION)
    if(property STREQUAL "OPTIONS_FILE")
      get_target_property(value ${target} CIQ_OPTIONS_FILE)
    else()
      get_target_property(value ${target} _CIQ_${property})
    endif()
    _ciq_json_string(json_${property} "${value}")
  endforeach()
  foreach(property IN ITEMS OBJECTIVES PARAMS CONSTRAINTS SEARCH_SPACE SEEDS THREADS_PER_BLOCK
      DYNAMIC_SHARED_MEMORY)
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
      pin_file CMAKE_GENERATOR compiler compiler_version architectures arg_ARCHITECTURES_UNREAD)
    _ciq_json_string(json_${name} "${${name}}")
  endforeach()
  _ciq_json_array(json_sources ${sources})
  # The target's other sources, which its host compiler builds without a candidate's -D (param_probe reads them).
  _ciq_compiled_sources(host_sources ${target} "C;CXX;OBJC;OBJCXX;HIP" "")
  _ciq_json_array(json_host_sources ${host_sources})
  _ciq_json_string(json_object_dir "${binary_dir}/CMakeFiles/${target}.dir")

  string(JOIN "\n" manifest
    "{"
    "  \"schema\": 2,"
    "  \"target\": ${json_target},"
    "  \"description\": ${json_DESCRIPTION},"
    "  \"source_dir\": ${json_CMAKE_SOURCE_DIR},"
    "  \"binary_dir\": ${json_CMAKE_BINARY_DIR},"
    "  \"target_source_dir\": ${json_source_dir},"
    "  \"target_binary_dir\": ${json_binary_dir},"
    "  \"cuda_sources\": ${json_sources},"
    "  \"host_sources\": ${json_host_sources},"
    "  \"object_dir\": ${json_object_dir},"
    "  \"objects\": [@CIQ_OBJECTS@],"
    "  \"target_file\": @CIQ_TARGET_FILE@,"
    "  \"benchmark\": ${benchmark_json},"
    "  \"metric_regex\": ${json_METRIC},"
    "  \"metric_unit\": ${json_METRIC_UNIT},"
    "  \"objectives\": ${json_OBJECTIVES},"
    "  \"params\": ${json_PARAMS},"
    "  \"constraints\": ${json_CONSTRAINTS},"
    "  \"seeds\": ${json_SEEDS},"
    "  \"search_space\": ${json_SEARCH_SPACE},"
    "  \"pin_dir\": ${json_PIN_DIR},"
    "  \"pin_file\": ${json_pin_file},"
    "  \"timeout\": ${timeout},"
    "  \"threads_per_block\": ${json_THREADS_PER_BLOCK},"
    "  \"dynamic_shared_memory\": ${json_DYNAMIC_SHARED_MEMORY},"
    "  \"options_file\": ${json_OPTIONS_FILE},"
    "  \"generator\": ${json_CMAKE_GENERATOR},"
    "  \"allow_numerics\": ${allow_numerics},"
    "  \"separable_compilation\": @CIQ_SEPARABLE@,"
    "  \"toolchain\": {\"cuda_compiler\": ${json_compiler}, \"cuda_compiler_version\": ${json_compiler_version}, \"architectures\": ${json_architectures}, \"architectures_default\": ${arg_ARCHITECTURES_DEFAULT}, \"architectures_unread\": ${json_arg_ARCHITECTURES_UNREAD}}"
    "}"
    "")
  # Everything is literal text except the benchmark's path and the object
  # files, known only at generate time.
  _ciq_genex_literal(manifest "${manifest}")
  if(benchmark)
    string(REPLACE "@CIQ_BENCHMARK_PATH@" "$<TARGET_FILE:${benchmark}>" manifest "${manifest}")
  endif()
  # What building the target itself writes: a scratch build that builds it whole must not write it outside the
  # build tree (EXECUTABLE_OUTPUT_PATH set to the source folder), over the user's own (ciq_build.project.preflight).
  get_target_property(type ${target} TYPE)
  if(type MATCHES "^(EXECUTABLE|STATIC_LIBRARY|SHARED_LIBRARY|MODULE_LIBRARY)$")
    string(REPLACE "@CIQ_TARGET_FILE@" "\"$<TARGET_FILE:${target}>\"" manifest "${manifest}")
  else()
    string(REPLACE "@CIQ_TARGET_FILE@" "null" manifest "${manifest}")
  endif()
  # CUDA_SEPARABLE_COMPILATION as the target ends up with it (set after the call, or from the variable).
  string(REPLACE "@CIQ_SEPARABLE@"
    "$<IF:$<BOOL:$<TARGET_PROPERTY:${target},CUDA_SEPARABLE_COMPILATION>>,true,false>" manifest "${manifest}")
  # The target's own object files, as CMake names them (never a glob of its
  # object folder, which keeps objects of sources deleted since).
  set(objects "$<TARGET_OBJECTS:${target}>")
  string(REPLACE "@CIQ_OBJECTS@"
    "$<$<BOOL:${objects}>:\"$<JOIN:${objects},\"$<COMMA> \">\">" manifest "${manifest}")
  # A multi-configuration tree (Ninja Multi-Config, Visual Studio, Xcode) has other objects in each configuration,
  # and a file generated with different contents fails the generate step: pins could not be applied there at all.
  # Its manifest is the configuration a plain `cmake --build` builds, which `list` and `verify` read.
  get_property(multi GLOBAL PROPERTY GENERATOR_IS_MULTI_CONFIG)
  set(condition 1)
  if(multi)
    set(built "${CMAKE_DEFAULT_BUILD_TYPE}")
    if(built STREQUAL "")
      list(GET CMAKE_CONFIGURATION_TYPES 0 built)
    endif()
    set(condition "$<CONFIG:${built}>")
  endif()
  file(GENERATE OUTPUT "${CMAKE_BINARY_DIR}/ciq/targets/${target}.json"
    CONTENT "${manifest}" CONDITION "${condition}")
  _ciq_write_cuda_flags(${target})
endfunction()

# _ciq_write_cuda_flags(<target>): the target's own nvcc flags, one a line, in
# <CMAKE_BINARY_DIR>/ciq/targets/<target>.cuda-flags-<config> (<config> noconfig without CMAKE_BUILD_TYPE;
# ciq_build.project.manifest.read_cuda_flags):
# CMAKE_CUDA_FLAGS, the configuration's CMAKE_CUDA_FLAGS_<CONFIG> (both as the target's directory sets them), then
# the target's COMPILE_OPTIONS as CUDA compiles see them, so that a tune leaves out the numerics knobs they already
# fix (--use_fast_math sets -ftz, -prec-div, -prec-sqrt), then its COMPILE_DEFINITIONS as -D (what a journaled
# evaluation is keyed by with the options: cuda-api-wrappers' CAW_WITH_COOPERATIVE_GROUPS option adds one through
# add_compile_definitions, which no source file shows). A file of its own, not a manifest field: a flag may hold quotes or backslashes, which
# JSON written at generate time cannot escape. Evaluated for CUDA alone (file(GENERATE) evaluates once per enabled
# language, and $<COMPILE_LANGUAGE:CUDA> holds only in CUDA's), one file per configuration (an option may
# depend on it, and a file written twice with different content fails the generate step).
function(_ciq_write_cuda_flags target)
  _ciq_target_cuda_flags(flags ${target} "")
  set(lines "")
  foreach(flag IN LISTS flags)
    _ciq_genex_literal(flag "${flag}")
    string(APPEND lines "${flag}\n")
  endforeach()
  foreach(config IN LISTS CMAKE_CONFIGURATION_TYPES CMAKE_BUILD_TYPE)
    string(TOUPPER "${config}" upper)
    _ciq_target_cuda_flags(flags ${target} "_${upper}")
    foreach(flag IN LISTS flags)
      if(NOT flag MATCHES "[$>]")  # (no nvcc numerics flag has one; inside $<...> it would need escaping)
        string(APPEND lines "$<$<CONFIG:${config}>:${flag}\n>")
      endif()
    endforeach()
  endforeach()
  set(options "$<TARGET_PROPERTY:${target},COMPILE_OPTIONS>")
  set(definitions "$<TARGET_PROPERTY:${target},COMPILE_DEFINITIONS>")
  _ciq_flags_configurations(unused config)
  file(GENERATE OUTPUT "${CMAKE_BINARY_DIR}/ciq/targets/${target}.cuda-flags-${config}"
    CONTENT "${lines}$<JOIN:${options},\n>\n$<$<BOOL:${definitions}>:-D$<JOIN:${definitions},\n-D>\n>"
    CONDITION "$<COMPILE_LANGUAGE:CUDA>" TARGET ${target})
endfunction()

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
