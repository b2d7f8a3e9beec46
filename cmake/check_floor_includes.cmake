# Build-time include check of one engine floor (see KvsFloors.cmake). Run as
#   cmake -DKVS_FLOOR_CONFIG=<floor>.cmake -P check_floor_includes.cmake
# The config sets:
#   KVS_FLOOR_NAME     the floor's name in messages ("cache")
#   KVS_FLOOR_ROOT     the source root the paths below are relative to
#   KVS_FLOOR_FILES    the floor's files
#   KVS_FLOOR_ALLOWED  folders it may include: its own first, then the floors below it
#   KVS_FLOOR_ALL      every floor's folder (an include belongs to the deepest one)
#   KVS_FLOOR_STAMP    written when every include is allowed
# Fails, naming each offending file and include, when a file includes a folder
# that is neither its own floor nor one below it.
cmake_minimum_required(VERSION 3.25)

if(NOT KVS_FLOOR_CONFIG OR NOT EXISTS "${KVS_FLOOR_CONFIG}")
  message(FATAL_ERROR "check_floor_includes: KVS_FLOOR_CONFIG '${KVS_FLOOR_CONFIG}' is not a file")
endif()
include("${KVS_FLOOR_CONFIG}")

function(floor_name folder out)
  string(REGEX REPLACE "^engine/" "" _name "${folder}")
  set(${out} "${_name}" PARENT_SCOPE)
endfunction()

# What the messages say the floor may include: "core, io (floors below it)".
set(_below "${KVS_FLOOR_ALLOWED}")
list(POP_FRONT _below)
set(_below_names "")
foreach(_f IN LISTS _below)
  floor_name("${_f}" _n)
  list(APPEND _below_names "${_n}")
endforeach()
if(_below_names)
  list(JOIN _below_names ", " _below_text)
  set(_may "${KVS_FLOOR_NAME} may only include ${KVS_FLOOR_NAME} and ${_below_text} (floors below it)")
else()
  set(_may "${KVS_FLOOR_NAME} may only include ${KVS_FLOOR_NAME} (no floor is below it)")
endif()

set(_problems "")
foreach(_file IN LISTS KVS_FLOOR_FILES)
  file(STRINGS "${KVS_FLOOR_ROOT}/${_file}" _lines REGEX "^[ \t]*#[ \t]*include[ \t]*\"(engine|kernels)/")
  foreach(_line IN LISTS _lines)
    if(NOT _line MATCHES "\"([^\"]+)\"")
      continue()
    endif()
    set(_include "${CMAKE_MATCH_1}")
    # The include's floor: the deepest floor folder that holds it.
    set(_owner "")
    foreach(_f IN LISTS KVS_FLOOR_ALL)
      string(LENGTH "${_f}" _len)
      string(LENGTH "${_owner}" _owner_len)
      if(_include MATCHES "^${_f}/" AND _len GREATER _owner_len)
        set(_owner "${_f}")
      endif()
    endforeach()
    if(_owner STREQUAL "" OR NOT _owner IN_LIST KVS_FLOOR_ALLOWED)
      list(APPEND _problems "  ${_file} includes ${_include}: ${_may}")
    endif()
  endforeach()
endforeach()

if(_problems)
  list(JOIN _problems "\n" _text)
  message(FATAL_ERROR "includes of folders that are not this floor or one below it (docs/design.md):\n${_text}\n")
endif()
file(TOUCH "${KVS_FLOOR_STAMP}")
