# The installable packages (installer/package.sh builds them): a Debian 12 .deb
# and a relocatable .tar.gz, each in two parts:
#
#   kvstudio       the three programs, the demo models, the docs, the man pages,
#                  the desktop entry and LibTorch's CPU libraries
#   kvstudio-cuda  LibTorch's CUDA part and the NVIDIA libraries it needs
#
# LibTorch is carried in the layout of the PyPI wheel it comes from,
# <prefix>/lib/kvstudio/torch/lib and <prefix>/lib/kvstudio/nvidia/*/lib, so that
# the libraries' own RPATHs ($ORIGIN/../../nvidia/...) find each other unchanged;
# the programs find LibTorch through their RPATH, relative to themselves, so the
# tarball works wherever it is unpacked and nothing needs LD_LIBRARY_PATH.
# Everything that comes from Debian (Qt 6, OpenCV, spdlog, fmt, libpng, PCRE2)
# becomes the .deb's Depends (dpkg-shlibdeps).
#
# Included from the top-level CMakeLists.txt when KVSTUDIO_PACKAGING is on (the
# `package` preset), after LibTorch is found and before the programs are defined.

if(NOT KVSTUDIO_TORCH_CUDA_AT_RUNTIME)
  message(FATAL_ERROR "KVSTUDIO_PACKAGING needs KVSTUDIO_TORCH_CUDA_AT_RUNTIME: the kvstudio package "
                      "must start without LibTorch's CUDA part")
endif()

# Every install() rule without a component belongs to the main package.
set(CMAKE_INSTALL_DEFAULT_COMPONENT_NAME kvstudio)
set(CMAKE_INSTALL_RPATH "\$ORIGIN/../lib/kvstudio/torch/lib")

set(_kvs_torch_lib "${TORCH_INSTALL_PREFIX}/lib")
set(_kvs_nvidia "${TORCH_INSTALL_PREFIX}/../nvidia")
if(NOT EXISTS "${_kvs_torch_lib}/libtorch_cpu.so")
  message(FATAL_ERROR "KVSTUDIO_PACKAGING: no libtorch_cpu.so in ${_kvs_torch_lib}")
endif()

# LibTorch's CPU part. The wheel's libtorch_cpu.so also needs the CUDA runtime
# and CUPTI (its profiler is built with them): both small, both load without a
# GPU, so they come with the main package.
install(FILES "${_kvs_torch_lib}/libtorch_cpu.so" "${_kvs_torch_lib}/libc10.so" "${_kvs_torch_lib}/libgomp.so.1"
        DESTINATION lib/kvstudio/torch/lib COMPONENT kvstudio)
set(_kvs_cpu_nvidia_libs libcudart.so.13 libcupti.so.13)
foreach(_lib IN LISTS _kvs_cpu_nvidia_libs)
  if(EXISTS "${_kvs_nvidia}/cu13/lib/${_lib}")
    install(FILES "${_kvs_nvidia}/cu13/lib/${_lib}" DESTINATION lib/kvstudio/nvidia/cu13/lib COMPONENT kvstudio)
  endif()
endforeach()
file(GLOB _kvs_torch_license_dir LIST_DIRECTORIES true "${TORCH_INSTALL_PREFIX}/../torch-*.dist-info/licenses")
if(_kvs_torch_license_dir)
  install(DIRECTORY ${_kvs_torch_license_dir}/ DESTINATION share/doc/kvstudio/licenses/libtorch COMPONENT kvstudio)
endif()

# LibTorch's CUDA part, loaded at start-up when present (engine/core/cuda_backend.h).
if(EXISTS "${_kvs_torch_lib}/libtorch_cuda.so")
  file(GLOB _kvs_torch_cuda_libs "${_kvs_torch_lib}/libtorch_cuda*.so" "${_kvs_torch_lib}/libc10_cuda.so"
       "${_kvs_torch_lib}/libtorch_nvshmem.so" "${_kvs_torch_lib}/libcaffe2_nvrtc.so")
  install(FILES ${_kvs_torch_cuda_libs} DESTINATION lib/kvstudio/torch/lib COMPONENT cuda)
  file(GLOB _kvs_nvidia_dirs LIST_DIRECTORIES true "${_kvs_nvidia}/*/lib")
  foreach(_dir IN LISTS _kvs_nvidia_dirs)
    get_filename_component(_name "${_dir}" DIRECTORY)
    get_filename_component(_name "${_name}" NAME)
    # Static libraries are for linking, not running; the BLAS and FFTW drop-ins
    # and the multi-GPU solver are not used by LibTorch.
    install(DIRECTORY "${_dir}/" DESTINATION lib/kvstudio/nvidia/${_name}/lib COMPONENT cuda
            PATTERN "*.a" EXCLUDE PATTERN "libnvblas.so*" EXCLUDE PATTERN "libcufftw.so*" EXCLUDE
            PATTERN "libcusolverMg.so*" EXCLUDE PATTERN "libcudart.so*" EXCLUDE PATTERN "libcupti.so*" EXCLUDE)
  endforeach()
  file(GLOB _kvs_nvidia_licenses "${TORCH_INSTALL_PREFIX}/../nvidia_*.dist-info/licenses/License.txt")
  foreach(_license IN LISTS _kvs_nvidia_licenses)
    get_filename_component(_dist "${_license}" DIRECTORY)
    get_filename_component(_dist "${_dist}" DIRECTORY)
    get_filename_component(_dist "${_dist}" NAME)
    string(REGEX REPLACE "\\.dist-info$" "" _dist "${_dist}")
    install(FILES "${_license}" DESTINATION share/doc/kvstudio-cuda/licenses RENAME "${_dist}.txt" COMPONENT cuda)
  endforeach()
  file(GLOB _kvs_nvidia_dir_licenses "${_kvs_nvidia}/*/LICENSE.txt")  # wheels without one in their dist-info
  foreach(_license IN LISTS _kvs_nvidia_dir_licenses)
    get_filename_component(_name "${_license}" DIRECTORY)
    get_filename_component(_name "${_name}" NAME)
    install(FILES "${_license}" DESTINATION share/doc/kvstudio-cuda/licenses RENAME "nvidia-${_name}.txt" COMPONENT cuda)
  endforeach()
  install(FILES "${CMAKE_CURRENT_LIST_DIR}/copyright-cuda" DESTINATION share/doc/kvstudio-cuda RENAME copyright
          COMPONENT cuda)
  set(_kvs_has_cuda_part ON)
else()
  set(_kvs_has_cuda_part OFF)
  message(STATUS "KVSTUDIO_PACKAGING: LibTorch has no CUDA part; only the kvstudio package is made")
endif()

# Documentation: the README and docs/ beside resources/ (their image links are
# relative to each other), the man pages, and Debian's copyright file.
install(FILES "${PROJECT_SOURCE_DIR}/README.md" DESTINATION share/kvstudio)
install(DIRECTORY "${PROJECT_SOURCE_DIR}/docs/" DESTINATION share/kvstudio/docs)
install(FILES "${PROJECT_SOURCE_DIR}/LICENSE" DESTINATION share/doc/kvstudio RENAME copyright)
install(FILES "${PROJECT_SOURCE_DIR}/installer/man/kvstudio.1" "${PROJECT_SOURCE_DIR}/installer/man/kvstudio-cli.1"
              "${PROJECT_SOURCE_DIR}/installer/man/kvstudio-train.1" DESTINATION share/man/man1)

# CPack ------------------------------------------------------------------------
set(CPACK_PACKAGE_NAME kvstudio)
set(CPACK_PACKAGE_VENDOR "KV Studio")
set(CPACK_PACKAGE_CONTACT "KV Studio developers <kvstudio@users.noreply.github.com>")
set(CPACK_PACKAGE_VERSION "${PROJECT_VERSION}")
set(CPACK_RESOURCE_FILE_LICENSE "${PROJECT_SOURCE_DIR}/LICENSE")
set(CPACK_PACKAGE_INSTALL_DIRECTORY kvstudio)
set(CPACK_STRIP_FILES OFF)  # the programs are release builds; LibTorch comes as the wheel has it
set(CPACK_THREADS 0)        # all cores for compression (package.sh runs it under nice)

if(_kvs_has_cuda_part)
  set(CPACK_COMPONENTS_ALL kvstudio cuda)
else()
  set(CPACK_COMPONENTS_ALL kvstudio)
endif()
set(CPACK_COMPONENT_KVSTUDIO_DISPLAY_NAME "KV Studio")
set(CPACK_COMPONENT_CUDA_DISPLAY_NAME "KV Studio CUDA part")
set(CPACK_COMPONENT_CUDA_DEPENDS kvstudio)

# Debian: one .deb per component. Each description's first line is its
# synopsis (CPACK_PACKAGE_DESCRIPTION_SUMMARY stays unset: CPack would put it
# above both); CPack indents the other lines.
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)  # kvstudio_0.1.0_amd64.deb, kvstudio-cuda_0.1.0_amd64.deb
set(CPACK_DEBIAN_COMPRESSION_TYPE zstd)  # see docs/installing.md for the measured choice
set(CPACK_DEBIAN_PACKAGE_SECTION graphics)
set(CPACK_DEBIAN_PACKAGE_HOMEPAGE "https://github.com/kvstudio/kvstudio")
set(CPACK_DEBIAN_KVSTUDIO_PACKAGE_NAME kvstudio)
set(CPACK_DEBIAN_KVSTUDIO_DESCRIPTION
   "Autoregressive image generation with a compressed, visible KV cache
KV Studio generates images with autoregressive image models (LlamaGen, VAR,
MAR, Janus-Pro) while compressing their key/value cache with training-free
policies, and shows what the cache does, line by line. It includes the
window (kvstudio), the command line (kvstudio-cli), the trainer of the demo
models (kvstudio-train), four small demo models and LibTorch's CPU
libraries. Install kvstudio-cuda as well to run on an NVIDIA GPU.")
# Depends from the programs' and libraries' ELF files (dpkg-shlibdeps). LibTorch's
# libraries are the package's own: dpkg-shlibdeps resolves their $ORIGIN RPATHs
# inside the package and adds nothing for them.
set(CPACK_DEBIAN_KVSTUDIO_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_CUDA_PACKAGE_NAME kvstudio-cuda)
set(CPACK_DEBIAN_CUDA_DESCRIPTION
   "KV Studio's CUDA part: LibTorch for NVIDIA GPUs
LibTorch's CUDA libraries and the NVIDIA libraries they need (cuBLAS, cuDNN,
cuFFT, cuSPARSE, NCCL, NVRTC, ...), from the PyPI wheels KV Studio is built
with. With this package and an NVIDIA driver, KV Studio runs on the GPU;
without it, on the CPU. The NVIDIA driver itself (libcuda.so.1) is not part
of it.")
# The NVIDIA libraries need only glibc and libstdc++; dpkg-shlibdeps would stop
# at libcuda.so.1, which comes with the NVIDIA driver, not from Debian's archive.
set(CPACK_DEBIAN_CUDA_PACKAGE_SHLIBDEPS OFF)
set(CPACK_DEBIAN_CUDA_PACKAGE_DEPENDS "kvstudio (= ${PROJECT_VERSION}), libc6 (>= 2.28), libstdc++6 (>= 12), libgcc-s1")
set(CPACK_DEBIAN_CUDA_PACKAGE_SUGGESTS "nvidia-driver")
set(CPACK_DEBIAN_CUDA_PACKAGE_SECTION non-free/graphics)  # the NVIDIA licence

# Tarballs: one per component, both unpacking into kvstudio-VERSION-linux-x86_64/
# (CPackOptions.cmake), so the CUDA part unpacks into the main installation
# (docs/installing.md).
set(CPACK_ARCHIVE_COMPONENT_INSTALL ON)
set(CPACK_ARCHIVE_KVSTUDIO_FILE_NAME "kvstudio-${PROJECT_VERSION}-linux-x86_64")
set(CPACK_ARCHIVE_CUDA_FILE_NAME "kvstudio-cuda-${PROJECT_VERSION}-linux-x86_64")
set(CPACK_PROJECT_CONFIG_FILE "${CMAKE_CURRENT_LIST_DIR}/CPackOptions.cmake")

set(CPACK_GENERATOR DEB TGZ)
include(CPack)
