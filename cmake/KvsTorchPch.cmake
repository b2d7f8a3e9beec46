# One precompiled header of LibTorch's tensor API, shared by the targets whose
# files use it.
#
# Why: parsing <ATen/Functions.h> alone takes about 10 s of a 2-core machine's CPU,
# and nearly two hundred of the engine's and tests' files include it, so a build
# with an empty compiler cache spent most of its time parsing the same headers
# (the ASan build: 28 min; docs/testing.md). Loading the precompiled header takes
# about 3 s, so each such file saves about 7 s. nlohmann/json is in it too: the
# bundle headers include it, so most of the same files parse it as well.
#
# One header for all: kvs_torch_pch compiles it once per build folder and every
# target listed in kvs_use_torch_pch() reuses that file (REUSE_FROM). GCC only
# takes a precompiled header made with the same language standard, optimisation,
# sanitizer and debug flags, which the targets share (they come from the preset);
# a target's own definitions (a test's KVSTUDIO_SOURCE_DIR) do not matter because
# no torch header reads them. -Winvalid-pch turns a header that GCC passes over
# into a warning in the build log instead of a silent slow build.
#
# The compiler cache: ccache caches both the header's compilation and the files
# that use it when its sloppiness allows the header's time macros and definitions
# (the launcher in the top CMakeLists.txt sets that); the header's bytes then come
# from the cache, so the files that include it hit as before (GCC writes a
# different file each time it compiles the header).
#
# Torch-free targets (the parsers, tokenizer, world, window) do not use it: to them
# it would add the 3 s load for nothing. KVSTUDIO_PCH=OFF builds without it, which
# also shows a file that uses torch without including what it uses.
include_guard(GLOBAL)

option(KVSTUDIO_PCH "Precompile LibTorch's tensor headers once for the engine, trainer and tests" ON)

if(KVSTUDIO_PCH)
  add_library(kvs_torch_pch STATIC ${PROJECT_SOURCE_DIR}/cmake/torch_pch_anchor.cpp)
  target_link_libraries(kvs_torch_pch PRIVATE torch nlohmann_json::nlohmann_json)
  target_compile_options(kvs_torch_pch PRIVATE ${KVSTUDIO_WARNINGS} -Winvalid-pch)
  target_precompile_headers(kvs_torch_pch PRIVATE
    <ATen/Functions.h>
    <ATen/TensorOperators.h>
    <ATen/core/Tensor.h>
    <ATen/CPUGeneratorImpl.h>
    <ATen/Parallel.h>
    <ATen/Context.h>
    <c10/core/GradMode.h>
    <c10/core/Device.h>
    <nlohmann/json.hpp>
    <algorithm>
    <cstdint>
    <functional>
    <map>
    <memory>
    <optional>
    <string>
    <vector>)
endif()

# Makes each named target compile with the shared header (no-op with KVSTUDIO_PCH=OFF).
function(kvs_use_torch_pch)
  if(NOT KVSTUDIO_PCH)
    return()
  endif()
  foreach(target IN LISTS ARGN)
    target_precompile_headers(${target} REUSE_FROM kvs_torch_pch)
    target_compile_options(${target} PRIVATE -Winvalid-pch)
  endforeach()
endfunction()
