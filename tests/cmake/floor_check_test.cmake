# The floor include check (cmake/check_floor_includes.cmake) on a planted tree:
# an upward include fails with a message naming the file, the include and what
# the floor may include; a nested floor's folder is not its parent's; kernels may
# include only kernels; a clean tree passes and writes its stamp. Run as
#   cmake -DCHECKER=<check_floor_includes.cmake> -DWORK_DIR=<scratch dir> -P floor_check_test.cmake
cmake_minimum_required(VERSION 3.25)

file(REMOVE_RECURSE "${WORK_DIR}")
file(MAKE_DIRECTORY "${WORK_DIR}")
set(_failures 0)

# Writes a config for floor `name` owning `files`, allowed `allowed`.
function(write_config path name files allowed)
  set(_all "kernels;engine/core;engine/io;engine/cache;engine/cache/policies;engine/models")
  string(REPLACE "/" "_" _stamp "${name}")
  file(WRITE "${path}" "set(KVS_FLOOR_NAME \"${name}\")\n"
                       "set(KVS_FLOOR_ROOT \"${WORK_DIR}/tree\")\n"
                       "set(KVS_FLOOR_FILES \"${files}\")\n"
                       "set(KVS_FLOOR_ALLOWED \"${allowed}\")\n"
                       "set(KVS_FLOOR_ALL \"${_all}\")\n"
                       "set(KVS_FLOOR_STAMP \"${WORK_DIR}/${_stamp}.stamp\")\n")
endfunction()

# Runs the checker; expects success (expected_text empty) or a failure whose
# output contains expected_text.
function(expect_check label config expected_text)
  execute_process(COMMAND "${CMAKE_COMMAND}" -DKVS_FLOOR_CONFIG=${config} -P "${CHECKER}"
                  RESULT_VARIABLE _rc OUTPUT_VARIABLE _out ERROR_VARIABLE _err)
  string(REPLACE "\n" " " _text "${_out}${_err}")
  string(REGEX REPLACE " +" " " _text "${_text}")
  if(expected_text STREQUAL "")
    if(NOT _rc EQUAL 0)
      message(SEND_ERROR "${label}: expected the check to pass, it failed:\n${_out}${_err}")
      math(EXPR _f "${_failures} + 1")
      set(_failures ${_f} PARENT_SCOPE)
    endif()
  else()
    string(FIND "${_text}" "${expected_text}" _at)
    if(_rc EQUAL 0 OR _at EQUAL -1)
      message(SEND_ERROR "${label}: expected a failure mentioning\n  ${expected_text}\ngot rc ${_rc}:\n${_out}${_err}")
      math(EXPR _f "${_failures} + 1")
      set(_failures ${_f} PARENT_SCOPE)
    endif()
  endif()
endfunction()

set(T "${WORK_DIR}/tree")
file(WRITE "${T}/engine/core/errors.h" "#pragma once\n#include <string>\n")
file(WRITE "${T}/engine/io/reader.h" "#pragma once\n#include \"engine/core/errors.h\"\n")
file(WRITE "${T}/engine/cache/kv_store.h"
     "#pragma once\n#include <vector>\n\n#include \"engine/core/errors.h\"\n#include \"kernels/attention.h\"\n")
file(WRITE "${T}/engine/cache/policies/policy.h" "#pragma once\n#include \"engine/cache/kv_store.h\"\n")
file(WRITE "${T}/engine/models/model.h" "#pragma once\n#include \"engine/cache/policies/policy.h\"\n")
file(WRITE "${T}/kernels/attention.h" "#pragma once\n#include <cstdint>\n")
file(WRITE "${T}/kernels/attention.cpp" "#include \"kernels/attention.h\"\n")

set(_cache_allowed "engine/cache;engine/core;kernels")

# Clean: cache includes core and kernels (below it); policies includes cache.
write_config("${WORK_DIR}/cache.cmake" cache "engine/cache/kv_store.h" "${_cache_allowed}")
expect_check("clean cache" "${WORK_DIR}/cache.cmake" "")
if(NOT EXISTS "${WORK_DIR}/cache.stamp")
  message(SEND_ERROR "clean cache: the stamp was not written")
  math(EXPR _failures "${_failures} + 1")
endif()
write_config("${WORK_DIR}/policies.cmake" cache/policies "engine/cache/policies/policy.h"
             "engine/cache/policies;engine/cache;engine/core;kernels")
expect_check("clean policies" "${WORK_DIR}/policies.cmake" "")
write_config("${WORK_DIR}/kernels.cmake" kernels "kernels/attention.h;kernels/attention.cpp" "kernels")
expect_check("clean kernels" "${WORK_DIR}/kernels.cmake" "")

# Upward include: cache includes a model.
file(APPEND "${T}/engine/cache/kv_store.h" "  #  include \"engine/models/model.h\"\n")
expect_check("cache includes models" "${WORK_DIR}/cache.cmake"
             "engine/cache/kv_store.h includes engine/models/model.h: cache may only include cache and core, kernels (floors below it)")

# A nested floor is not its parent's: cache including cache/policies is upward too.
file(WRITE "${T}/engine/cache/kv_store.h" "#pragma once\n#include \"engine/cache/policies/policy.h\"\n")
expect_check("cache includes cache/policies" "${WORK_DIR}/cache.cmake"
             "engine/cache/kv_store.h includes engine/cache/policies/policy.h: cache may only include")

# A folder below that is not a dependency (io) is refused as well.
file(WRITE "${T}/engine/cache/kv_store.h" "#pragma once\n#include \"engine/io/reader.h\"\n")
expect_check("cache includes io" "${WORK_DIR}/cache.cmake" "engine/cache/kv_store.h includes engine/io/reader.h")

# Kernels are a leaf.
file(APPEND "${T}/kernels/attention.cpp" "#include \"engine/core/errors.h\"\n")
expect_check("kernels include engine" "${WORK_DIR}/kernels.cmake"
             "kernels/attention.cpp includes engine/core/errors.h: kernels may only include kernels (no floor is below it)")

# Commented-out includes and system includes are not includes.
file(WRITE "${T}/engine/cache/kv_store.h"
     "#pragma once\n// #include \"engine/models/model.h\"\n#include <engine/models/model.h>\n")
expect_check("comments" "${WORK_DIR}/cache.cmake" "")

if(_failures GREATER 0)
  message(FATAL_ERROR "${_failures} floor check expectation(s) failed")
endif()
message(STATUS "floor include check: all expectations met")
