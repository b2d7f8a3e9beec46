#!/usr/bin/env bash
# Builds KV Studio's packages in one command, from a release build of the three
# programs (the `package` preset: LibTorch's CPU libraries linked, its CUDA part
# loaded at start-up when installed):
#
#   build/package/packages/kvstudio_<version>_amd64.deb          the programs, demo models, docs
#   build/package/packages/kvstudio-cuda_<version>_amd64.deb     LibTorch's CUDA part (GPU)
#   build/package/packages/kvstudio-<version>-linux-x86_64.tar.gz       the same, relocatable
#   build/package/packages/kvstudio-cuda-<version>-linux-x86_64.tar.gz
#
# usage: installer/package.sh [--no-cuda] [--only deb|tgz] [--jobs N] [--build-dir DIR]
#   --no-cuda        leave out the CUDA part (3.3 GiB of libraries; minutes to compress)
#   --only G         make only the .deb files (deb) or only the tarballs (tgz)
#   --build-dir DIR  build there instead of build/package, e.g. build/default:
#                    the compile flags are the default build's, so its objects
#                    are reused (it then becomes a package build: no tests)
# Needs what installer/install-deps.sh installs (and dpkg-dev for dpkg-shlibdeps).
# See docs/installing.md.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

components="kvstudio;cuda"
generators="DEB;TGZ"
jobs=$(nproc)
build=build/package
while [[ $# -gt 0 ]]; do
  case "$1" in
    --no-cuda) components="kvstudio" ;;
    --only)
      case "${2:-}" in
        deb) generators="DEB" ;;
        tgz) generators="TGZ" ;;
        *) echo "package.sh: --only takes deb or tgz" >&2; exit 2 ;;
      esac
      shift ;;
    --jobs) jobs=${2:?--jobs needs a number}; shift ;;
    --build-dir) build=${2:?--build-dir needs a folder}; shift ;;
    -h|--help) sed -n '2,19p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "package.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
  shift
done

command -v dpkg-shlibdeps >/dev/null || { echo "package.sh: dpkg-shlibdeps missing (apt-get install dpkg-dev)" >&2; exit 1; }

# The same compiler cache setup as the quick-start commands, so that objects of
# the default build are reused (the compile flags are the same).
export CCACHE_BASEDIR="$root" CCACHE_NOHASHDIR=1
nice -n 19 cmake --preset package -B "$build" >/dev/null
start=$(date +%s)
nice -n 19 cmake --build "$build" -j"$jobs"
echo "package.sh: build $(( $(date +%s) - start )) s"

# The programs must start without LibTorch's CUDA part: refuse a build that links it.
for program in kvstudio kvstudio-cli kvstudio-train; do
  file=$(find "$build/app" -type f -name "$program" -perm -u+x | head -1)
  [[ -n "$file" ]] || continue
  if readelf -d "$file" | grep -Eq 'NEEDED.*\[lib(torch_cuda|c10_cuda|torch)\.so\]'; then
    echo "package.sh: $program links LibTorch's CUDA part; the package build must not" >&2
    exit 1
  fi
done

out=$build/packages
rm -rf "$out" && mkdir -p "$out"
IFS=';' read -r -a gens <<<"$generators"
for g in "${gens[@]}"; do
  start=$(date +%s)
  (cd "$build" && nice -n 19 cpack -G "$g" -B "$root/$out" -D "CPACK_COMPONENTS_ALL=$components")
  echo "package.sh: cpack $g $(( $(date +%s) - start )) s"
done
rm -rf "$out/_CPack_Packages"

echo
echo "packages in $out:"
for f in "$out"/*.deb "$out"/*.tar.gz; do
  [[ -e "$f" ]] || continue
  size=$(du -m "$f" | cut -f1)
  if [[ "$f" == *.deb ]]; then
    installed=$(( $(dpkg-deb -f "$f" Installed-Size) / 1024 ))
  else
    installed=$(( $(tar -tvzf "$f" | awk '{s += $3} END {print int(s / 1048576)}') ))
  fi
  printf '  %-58s %6s MiB, %6s MiB installed\n' "$(basename "$f")" "$size" "$installed"
done
