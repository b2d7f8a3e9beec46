# Engine floors: each one a STATIC library over one folder that may include only
# its own folder and the floors it depends on (directly or through them), never a
# floor above it. docs/design.md lists the floors from core up; kernels/ is a leaf.
#
#   kvs_engine_floor(<target>
#     FOLDER <dir>                  folder the floor owns, relative to the current
#                                   source dir (its subfolders too, except those
#                                   that are floors of their own)
#     SOURCES <file>...             the library's sources, as for add_library
#     [DEPENDS <floor>...]          lower floors, linked PUBLIC; they and their own
#                                   floors below are what the folder may include
#     [LIBRARIES <lib>...]          third-party libraries linked PUBLIC (torch, ...)
#     [PRIVATE_LIBRARIES <lib>...]  third-party libraries linked PRIVATE (PNG, ...)
#     [EXCLUDE <glob>...])          files in FOLDER (globs relative to it) that are
#                                   not the floor's: code of a floor above that
#                                   still lives in this folder
#
# The include check runs at build time (cmake -P cmake/check_floor_includes.cmake,
# no Python): every .h/.cpp/.cu/.cuh of the folder is scanned for
# `#include "engine/..."` and `#include "kernels/..."`, each include is mapped to
# the deepest floor folder that holds it, and the build of <target> fails when
# that floor is neither its own nor below it. The check's stamp is a dependency
# of <target>, so `cmake --build` stops there. The checks are created once every
# floor is known (deferred to the end of the top-level CMakeLists.txt), so a floor
# folder nested in another (cache/policies in cache) belongs to its own floor.
include_guard(GLOBAL)

set(KVS_FLOOR_CHECK_SCRIPT "${CMAKE_CURRENT_LIST_DIR}/check_floor_includes.cmake")

function(kvs_engine_floor target)
  cmake_parse_arguments(PARSE_ARGV 1 arg "" "FOLDER" "SOURCES;DEPENDS;LIBRARIES;PRIVATE_LIBRARIES;EXCLUDE")
  if(arg_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "kvs_engine_floor(${target}): unexpected arguments ${arg_UNPARSED_ARGUMENTS}")
  endif()
  if(NOT arg_FOLDER OR NOT arg_SOURCES)
    message(FATAL_ERROR "kvs_engine_floor(${target}): FOLDER and SOURCES are required")
  endif()
  foreach(dep IN LISTS arg_DEPENDS)
    if(NOT TARGET ${dep})
      message(FATAL_ERROR "kvs_engine_floor(${target}): DEPENDS ${dep} is not a target defined before it "
                          "(floors are defined bottom-up)")
    endif()
    get_target_property(_dep_folder ${dep} KVS_FLOOR_FOLDER)
    if(NOT _dep_folder)
      message(FATAL_ERROR "kvs_engine_floor(${target}): DEPENDS ${dep} is not a floor; "
                          "link third-party libraries with LIBRARIES or PRIVATE_LIBRARIES")
    endif()
  endforeach()

  get_filename_component(_folder "${arg_FOLDER}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_SOURCE_DIR}")
  file(RELATIVE_PATH _rel "${PROJECT_SOURCE_DIR}" "${_folder}")
  if(_rel STREQUAL "" OR _rel MATCHES "^\\.\\.")
    message(FATAL_ERROR "kvs_engine_floor(${target}): FOLDER ${arg_FOLDER} is not inside the project")
  endif()

  add_library(${target} STATIC ${arg_SOURCES})
  target_include_directories(${target} PUBLIC ${PROJECT_SOURCE_DIR})
  target_link_libraries(${target} PUBLIC ${arg_DEPENDS} ${arg_LIBRARIES} PRIVATE ${arg_PRIVATE_LIBRARIES})
  target_compile_options(${target} PRIVATE ${KVSTUDIO_WARNINGS})
  set_target_properties(${target} PROPERTIES
    KVS_FLOOR_FOLDER "${_rel}"
    KVS_FLOOR_DEPENDS "${arg_DEPENDS}"
    KVS_FLOOR_EXCLUDE "${arg_EXCLUDE}")

  get_property(_floors GLOBAL PROPERTY KVS_FLOORS)
  if(NOT _floors)
    cmake_language(DEFER DIRECTORY "${CMAKE_SOURCE_DIR}" CALL _kvs_add_floor_checks)
  endif()
  set_property(GLOBAL APPEND PROPERTY KVS_FLOORS ${target})
endfunction()

# "engine/cache/policies" -> "cache/policies"; "kernels" stays "kernels".
function(_kvs_floor_name folder out)
  string(REGEX REPLACE "^engine/" "" _name "${folder}")
  set(${out} "${_name}" PARENT_SCOPE)
endfunction()

# Own floor first, then every floor below it (DEPENDS, transitively).
function(_kvs_floor_allowed target out)
  set(_seen ${target})
  set(_todo ${target})
  while(_todo)
    list(POP_FRONT _todo _t)
    get_target_property(_deps ${_t} KVS_FLOOR_DEPENDS)
    foreach(_d IN LISTS _deps)
      if(NOT _d IN_LIST _seen)
        list(APPEND _seen ${_d})
        list(APPEND _todo ${_d})
      endif()
    endforeach()
  endwhile()
  set(${out} ${_seen} PARENT_SCOPE)
endfunction()

function(_kvs_add_floor_checks)
  get_property(_floors GLOBAL PROPERTY KVS_FLOORS)
  set(_all_folders "")
  foreach(_t IN LISTS _floors)
    get_target_property(_f ${_t} KVS_FLOOR_FOLDER)
    list(APPEND _all_folders "${_f}")
  endforeach()

  foreach(_t IN LISTS _floors)
    get_target_property(_folder ${_t} KVS_FLOOR_FOLDER)
    get_target_property(_exclude ${_t} KVS_FLOOR_EXCLUDE)
    _kvs_floor_name("${_folder}" _name)

    # The folder's files, less nested floors and excluded files.
    file(GLOB_RECURSE _files CONFIGURE_DEPENDS RELATIVE "${PROJECT_SOURCE_DIR}"
         "${PROJECT_SOURCE_DIR}/${_folder}/*.h" "${PROJECT_SOURCE_DIR}/${_folder}/*.cpp"
         "${PROJECT_SOURCE_DIR}/${_folder}/*.cu" "${PROJECT_SOURCE_DIR}/${_folder}/*.cuh")
    foreach(_other IN LISTS _all_folders)
      if(NOT _other STREQUAL _folder AND _other MATCHES "^${_folder}/")
        list(FILTER _files EXCLUDE REGEX "^${_other}/")
      endif()
    endforeach()
    foreach(_glob IN LISTS _exclude)
      if(_glob)
        file(GLOB _excluded RELATIVE "${PROJECT_SOURCE_DIR}" "${PROJECT_SOURCE_DIR}/${_folder}/${_glob}")
        if(_excluded)
          list(REMOVE_ITEM _files ${_excluded})
        endif()
      endif()
    endforeach()

    _kvs_floor_allowed(${_t} _allowed_targets)
    set(_allowed "")
    foreach(_a IN LISTS _allowed_targets)
      get_target_property(_af ${_a} KVS_FLOOR_FOLDER)
      list(APPEND _allowed "${_af}")
    endforeach()

    set(_config "${CMAKE_BINARY_DIR}/floors/${_t}.cmake")
    set(_stamp "${CMAKE_BINARY_DIR}/floors/${_t}.stamp")
    file(CONFIGURE OUTPUT "${_config}" CONTENT [=[
set(KVS_FLOOR_NAME "@_name@")
set(KVS_FLOOR_ROOT "@PROJECT_SOURCE_DIR@")
set(KVS_FLOOR_FILES "@_files@")
set(KVS_FLOOR_ALLOWED "@_allowed@")
set(KVS_FLOOR_ALL "@_all_folders@")
set(KVS_FLOOR_STAMP "@_stamp@")
]=] @ONLY)
    list(TRANSFORM _files PREPEND "${PROJECT_SOURCE_DIR}/" OUTPUT_VARIABLE _deps)
    add_custom_command(
      OUTPUT "${_stamp}"
      COMMAND "${CMAKE_COMMAND}" -DKVS_FLOOR_CONFIG=${_config} -P "${KVS_FLOOR_CHECK_SCRIPT}"
      DEPENDS ${_deps} "${_config}" "${KVS_FLOOR_CHECK_SCRIPT}"
      COMMENT "Checking that ${_name} includes only its own floor and the floors below it"
      VERBATIM)
    add_custom_target(${_t}_include_check DEPENDS "${_stamp}")
    add_dependencies(${_t} ${_t}_include_check)
  endforeach()
endfunction()
