#!/usr/bin/env bash
# Gathers what the headless build (engine, CLI, engine tests; no GUI) needs
# beyond LibTorch, CMake, nvcc and the compiler into one ignored folder,
# gpu-deps/, to be copied with the tree to a GPU machine that has no internet
# and none of these Debian packages (tools/gpu_checks.sh unpacks and uses it).
# Taken from this machine's installed Debian 12 packages (installer/install-deps.sh
# installs them): headers, CMake and pkg-config files and libraries of
# nlohmann-json, spdlog + fmt, GoogleTest (with GoogleMock, which its CMake
# config names), libpng, zlib, PCRE2 (8-bit), OpenCV core + imgproc (with a
# CMake config of their own: Debian's names every OpenCV module), pkgconf, and
# every shared library those libraries load that is not the C and C++ runtime.
# The prefix is packed as gpu-deps/deps.tar.xz beside its file list; the
# script prints the folder's size and fails above LIMIT_MB (default 15).
# Usage: tools/pack_gpu_deps.sh [OUT_DIR]      (default: gpu-deps/ in the repository)
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
out="${1:-$repo/gpu-deps}"
limit_mb="${LIMIT_MB:-15}"
arch="$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || echo x86_64-linux-gnu)"

# Development packages: their headers, CMake/pkg-config files and link libraries.
dev_packages=(nlohmann-json3-dev libspdlog-dev libfmt-dev libgtest-dev libgmock-dev libpng-dev zlib1g-dev
  libpcre2-dev libopencv-core-dev libopencv-imgproc-dev libsentencepiece-dev)
for p in "${dev_packages[@]}" pkgconf-bin; do
  dpkg -s "$p" >/dev/null 2>&1 || { echo "pack_gpu_deps: package $p is not installed (installer/install-deps.sh)" >&2; exit 1; }
done

stage="$(mktemp -d)"
trap 'rm -rf "$stage"' EXIT
root="$stage/usr"
lib="$root/lib/$arch"
mkdir -p "$root/include" "$lib" "$root/bin"

# One file of a package into the prefix. A shared library goes into the one
# library folder with its link name and its soname as relative links to one
# copy of the real file (what the linker and the loader look for).
take() {
  local path=$1 rel=${1#/usr/}
  local name
  name=$(basename "$path")
  if [[ ( "$path" == /usr/lib/$arch/* || "$path" == /lib/$arch/* ) && ( "$name" == *.so || "$name" == *.so.* ) ]]; then
    local real soname
    real=$(basename "$(readlink -f "$path")")
    [[ -e "$lib/$real" ]] || cp "$(readlink -f "$path")" "$lib/$real"
    soname=$(objdump -p "$lib/$real" | awk '$1 == "SONAME" {print $2}')
    for link in "$name" "$soname"; do
      [[ -n "$link" && "$link" != "$real" && ! -e "$lib/$link" ]] && ln -s "$real" "$lib/$link"
    done
    return 0
  fi
  mkdir -p "$root/$(dirname "$rel")"
  cp -P "$path" "$root/$rel"
}

for p in "${dev_packages[@]}"; do
  while IFS= read -r f; do
    [[ -f "$f" || -L "$f" ]] || continue
    case "$f" in
      /usr/share/doc/* | /usr/share/man/* | /usr/src/* | /usr/bin/*) continue ;;
      # OpenCV's static archives (21 MB) and PCRE2's other widths are not linked.
      */libopencv_*.a | */libpcre2-16* | */libpcre2-32* | */libpcre2-posix* | */pcre2posix.h) continue ;;
      */libpng*.a | */libz.a | */libpcre2-8.a) continue ;;
    esac
    take "$f"
  done < <(dpkg -L "$p")
done
# The shared libraries behind the link names (their packages hold the real files).
for so in libspdlog.so libfmt.so libpng16.so libz.so libpcre2-8.so libopencv_core.so libopencv_imgproc.so \
  libsentencepiece.so libsentencepiece_train.so; do
  take "/usr/lib/$arch/$so"
done
# pkg-config for CMake's pkg_check_modules (PCRE2), in case the machine has
# none: pkgconf with its library, behind a wrapper that finds both here.
cp /usr/bin/pkgconf "$root/bin/pkgconf"
take "/usr/lib/$arch/libpkgconf.so.3"
cat >"$root/bin/pkg-config" <<EOF
#!/bin/sh
here=\$(dirname "\$(readlink -f "\$0")")
LD_LIBRARY_PATH="\$here/../lib/$arch\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}" exec "\$here/pkgconf" "\$@"
EOF
chmod +x "$root/bin/pkg-config"

# Every library those load, except the C and C++ runtime the machine's compiler
# brings, copied under its soname (Debian's LAPACK sits behind alternatives).
runtime='^(libc|libm|libdl|librt|libpthread|libstdc\+\+|libgcc_s|ld-linux-x86-64|linux-vdso)\.so'
for _ in 1 2 3; do
  for f in "$lib"/*.so* "$root/bin/pkgconf"; do
    [[ -L "$f" ]] && continue
    ldd "$f" 2>/dev/null | awk '$2 == "=>" && $3 ~ /^\// {print $1, $3}' | while read -r soname path; do
      [[ "$soname" =~ $runtime ]] && continue
      [[ -e "$lib/$soname" ]] || take "$path"
    done
  done
done

# pkg-config files relative to where they are unpacked.
sed -i 's|^prefix=/usr$|prefix=${pcfiledir}/../../..|' "$lib"/pkgconfig/*.pc
sed -i 's|^prefix=/usr$|prefix=${pcfiledir}/../..|' "$root"/share/pkgconfig/*.pc

# OpenCV: core and imgproc only, from the same Debian 4.6 libraries.
ocv_version=$(sed -n 's/^#define CV_VERSION_\(MAJOR\|MINOR\|REVISION\) *\([0-9]*\).*/\2/p' \
  /usr/include/opencv4/opencv2/core/version.hpp | paste -sd.)
mkdir -p "$lib/cmake/opencv4"
cat >"$lib/cmake/opencv4/OpenCVConfig.cmake" <<EOF
# Written by tools/pack_gpu_deps.sh: OpenCV $ocv_version core and imgproc from
# Debian 12's packages (Debian's own config names every module it packages).
get_filename_component(_kvs_ocv_lib "\${CMAKE_CURRENT_LIST_DIR}/../.." ABSOLUTE)
get_filename_component(_kvs_ocv_prefix "\${_kvs_ocv_lib}/../.." ABSOLUTE)
set(OpenCV_VERSION $ocv_version)
set(OpenCV_INCLUDE_DIRS "\${_kvs_ocv_prefix}/include/opencv4" "\${_kvs_ocv_prefix}/include/$arch/opencv4")
foreach(_kvs_m core imgproc)
  if(NOT TARGET opencv_\${_kvs_m})
    add_library(opencv_\${_kvs_m} SHARED IMPORTED)
    set_target_properties(opencv_\${_kvs_m} PROPERTIES
      IMPORTED_LOCATION "\${_kvs_ocv_lib}/libopencv_\${_kvs_m}.so.$ocv_version"
      IMPORTED_SONAME "libopencv_\${_kvs_m}.so.${ocv_version//./}"
      INTERFACE_INCLUDE_DIRECTORIES "\${OpenCV_INCLUDE_DIRS}")
  endif()
endforeach()
set_property(TARGET opencv_imgproc PROPERTY INTERFACE_LINK_LIBRARIES opencv_core)
set(OpenCV_LIBS opencv_core opencv_imgproc)
set(OpenCV_FOUND TRUE)
foreach(_kvs_c \${OpenCV_FIND_COMPONENTS})
  if(NOT _kvs_c MATCHES "^(opencv_)?(core|imgproc)\$")
    set(OpenCV_FOUND FALSE)
    set(OpenCV_NOT_FOUND_MESSAGE "this OpenCV (tools/pack_gpu_deps.sh) has core and imgproc only, not \${_kvs_c}")
  endif()
endforeach()
EOF

# Pack: a prefix of many small headers and libraries travels as one archive.
rm -rf "$out"
mkdir -p "$out"
(cd "$stage" && find usr \( -type f -o -type l \) | LC_ALL=C sort >"$out/files.txt")
tar -C "$stage" -cf - usr | xz -9 -T1 >"$out/deps.tar.xz"
{
  echo "packed by tools/pack_gpu_deps.sh on $(date -u +%F) from Debian $(cat /etc/debian_version)"
  for p in "${dev_packages[@]}" pkgconf-bin; do dpkg-query -W -f='${Package} ${Version}\n' "$p"; done
} >"$out/README.txt"

unpacked=$(du -sb "$stage/usr" | cut -f1)
packed=$(du -sb "$out" | cut -f1)
awk -v o="$out" -v p="$packed" -v u="$unpacked" -v n="$(wc -l <"$out/files.txt")" \
  'BEGIN {printf "pack_gpu_deps: %s: %.1f MB (%d files, %.1f MB unpacked)\n", o, p / 1e6, n, u / 1e6}'
if ((packed > limit_mb * 1000000)); then
  echo "pack_gpu_deps: $out is larger than $limit_mb MB" >&2
  exit 1
fi
[[ "${CHECK:-1}" == 0 ]] && exit 0

# The check: unpack the archive elsewhere and build and run a program that uses
# every library through the project's own find_package / pkg_check_modules
# calls, with /usr and / ignored as search prefixes and pkg-config limited to
# the archive, then show that every header and library came from the archive.
check="$stage/check"
mkdir -p "$check/deps" "$check/src"
tar -C "$check/deps" -xJf "$out/deps.tar.xz"
deps="$check/deps/usr"
cat >"$check/src/CMakeLists.txt" <<'EOF'
cmake_minimum_required(VERSION 3.25)
project(gpu_deps_check CXX)
set(CMAKE_CXX_STANDARD 17)
find_package(nlohmann_json 3 REQUIRED)
find_package(spdlog REQUIRED)
find_package(PNG REQUIRED)
find_package(ZLIB REQUIRED)
find_package(PkgConfig REQUIRED)
pkg_check_modules(PCRE2 REQUIRED IMPORTED_TARGET libpcre2-8>=10.40)
find_package(OpenCV REQUIRED COMPONENTS core imgproc)
find_package(GTest REQUIRED)
add_executable(gpu_deps_check main.cpp)
target_include_directories(gpu_deps_check SYSTEM PRIVATE ${OpenCV_INCLUDE_DIRS})
target_link_libraries(gpu_deps_check PRIVATE nlohmann_json::nlohmann_json spdlog::spdlog PNG::PNG ZLIB::ZLIB
  PkgConfig::PCRE2 opencv_core opencv_imgproc GTest::gtest_main)
EOF
cat >"$check/src/main.cpp" <<'EOF'
#define PCRE2_CODE_UNIT_WIDTH 8
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <opencv2/core.hpp>
#include <opencv2/imgproc.hpp>
#include <pcre2.h>
#include <png.h>
#include <spdlog/spdlog.h>
#include <zlib.h>

TEST(GpuDeps, EveryLibraryRuns) {
  EXPECT_EQ(nlohmann::json::parse(R"({"a": 2})")["a"], 2);
  cv::Mat image(8, 8, CV_8UC3, cv::Scalar(10, 20, 30)), small;
  cv::resize(image, small, cv::Size(4, 4), 0, 0, cv::INTER_AREA);
  EXPECT_EQ(small.at<cv::Vec3b>(1, 1)[2], 30);
  int error = 0;
  PCRE2_SIZE offset = 0;
  pcre2_code* re = pcre2_compile(reinterpret_cast<PCRE2_SPTR>("\\p{L}+"), PCRE2_ZERO_TERMINATED, PCRE2_UTF | PCRE2_UCP,
                                 &error, &offset, nullptr);
  ASSERT_NE(re, nullptr);
  pcre2_code_free(re);
  EXPECT_STREQ(png_get_libpng_ver(nullptr), PNG_LIBPNG_VER_STRING);
  EXPECT_STREQ(zlibVersion(), ZLIB_VERSION);
  spdlog::info("spdlog {}", SPDLOG_VER_MAJOR);
}
EOF
lib_dir="$deps/lib/$arch"
PKG_CONFIG_LIBDIR="$lib_dir/pkgconfig:$deps/share/pkgconfig" cmake -S "$check/src" -B "$check/build" -G Ninja \
  -DCMAKE_BUILD_TYPE=Release "-DCMAKE_PREFIX_PATH=$deps" "-DCMAKE_SYSTEM_IGNORE_PREFIX_PATH=/usr;/" \
  "-DPKG_CONFIG_EXECUTABLE=$deps/bin/pkg-config" \
  "-DCMAKE_EXE_LINKER_FLAGS=-Wl,-rpath-link,$lib_dir -Wl,--disable-new-dtags" >"$check/configure.log" 2>&1 ||
  { cat "$check/configure.log"; echo "pack_gpu_deps: check: configure failed" >&2; exit 1; }
cmake --build "$check/build" >"$check/build.log" 2>&1 ||
  { cat "$check/build.log"; echo "pack_gpu_deps: check: build failed" >&2; exit 1; }
"$check/build/gpu_deps_check" >"$check/run.log" 2>&1 ||
  { cat "$check/run.log"; echo "pack_gpu_deps: check: the program failed" >&2; exit 1; }
outside=$( (cd "$check/build" && ninja -t deps) | grep -E '^ +/usr/include/(.*/)?(opencv4|spdlog|fmt|nlohmann|gtest|gmock|png|pcre2|zlib)' || true)
outside+=$(ldd "$check/build/gpu_deps_check" | grep -E 'lib(opencv|spdlog|fmt|png|pcre2|z|tbb|lapack|blas)[._]' |
  grep -v "$lib_dir" || true)
[[ -z "$outside" ]] || { echo "pack_gpu_deps: check: taken from outside the archive:" >&2; echo "$outside" >&2; exit 1; }
echo "pack_gpu_deps: check: a program using every library built and ran from the archive alone" \
  "($(grep -c ' => '"$lib_dir" <(ldd "$check/build/gpu_deps_check")) of its libraries loaded from it)"
