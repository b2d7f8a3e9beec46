#!/usr/bin/env bash
# The GPU checks of the engine in one command, for a machine with an NVIDIA GPU
# and the build's dependencies (the GUI is not built): configure the headless
# preset for this GPU only, build the engine tests and the CLI, run every test
# that needs a GPU, then the speed targets of docs/benchmarks.md ("GPU") in order
# of importance, each under a time limit, so that a machine lent for a few
# minutes gives as many answers as it can. Everything goes to $OUT (default
# gpu-checks/): summary.txt (one line per step, with its time and result), and
# one log per step. Usage:
#   tools/gpu_checks.sh [STEP...]     steps: build tests b1 b8 graphs xl mar compare (default: all)
# The build's dependencies beyond LibTorch, CMake, nvcc and the compiler (spdlog,
# fmt, nlohmann-json, GoogleTest, libpng, zlib, PCRE2, OpenCV core + imgproc,
# pkg-config): on a machine without them and without internet, run
#   tools/pack_gpu_deps.sh
# on a Debian 12 machine that has them (installer/install-deps.sh) before the
# tree is copied: it writes gpu-deps/ (ignored by git; about 8 MB, checked to be
# at most 15 MB), which travels with the tree. When gpu-deps/deps.tar.xz is
# there, this script unpacks it into build/gpu-checks-deps/, puts it first in
# CMAKE_PREFIX_PATH, links with it on the run-time path (its libraries need
# glibc 2.34 and libstdc++ GLIBCXX_3.4.30, GCC 12's, or newer) and uses its
# pkg-config when the machine has none.
# Environment:
#   OUT                 where the logs go
#   GPU_ARCH            CUDA architecture to build for (default: what nvidia-smi reports, e.g. 90)
#   JOBS                build parallelism (default: every core)
#   CMAKE_PREFIX_PATH   extra prefixes for the build's dependencies; LibTorch is found through
#                       the python3 that has torch when no .venv/ is there
#   STEP_LIMIT_S        time limit of each bench step in seconds (default 150)
set -uo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo"
out="${OUT:-$repo/gpu-checks}"
mkdir -p "$out"
jobs="${JOBS:-$(nproc)}"
limit="${STEP_LIMIT_S:-150}"
build="$repo/build/gpu-checks"
cli="$build/app/kvstudio-cli"
steps=("$@")
[[ ${#steps[@]} -eq 0 ]] && steps=(build tests b1 b8 graphs xl mar compare)

note() { printf '%s %s\n' "$(date -u +%T)" "$*" | tee -a "$out/summary.txt"; }
# step NAME LIMIT CMD...: runs CMD with its output in $out/NAME.log, notes time and exit code.
step() {
  local name=$1 seconds=$2
  shift 2
  local start=$SECONDS
  timeout "$seconds" "$@" > "$out/$name.log" 2>&1
  local rc=$? why=""
  ((rc == 124)) && why=" (time limit)"
  ((rc > 128 && rc != 137)) && why=" (signal $((rc - 128)))" && symbolize "$out/$name.log"
  note "$name rc=$rc$why $((SECONDS - start)) s"
  return $rc
}
# symbolize LOG: the programs print a native stack on a fatal signal
# (engine/core/crash_backtrace.h) as "object(+0xOFFSET)" lines; the program's
# own frames are offsets, named here with addr2line and appended to the log.
symbolize() {
  local log=$1 object offset
  grep -q "native stack:" "$log" || return 0
  echo "--- the stack's frames in the program, named:" >> "$log"
  grep -oE "^[^ (]+\(\+0x[0-9a-f]+\)" "$log" | while IFS= read -r frame; do
    object=${frame%%(*}
    offset=${frame#*(+}
    offset=${offset%)}
    [[ -f "$object" && "$object" != *.so* ]] || continue
    printf '%s %s\n' "$offset" "$(addr2line -f -C -e "$object" "$offset" 2>/dev/null | head -1)" >> "$log"
  done
  grep -A40 "^--- the stack's frames" "$log" | tail -n +2 | head -12 | cut -c1-160 | sed "s/^/  /" >> "$out/summary.txt"
}
wants() { [[ " ${steps[*]} " == *" $1 "* ]]; }

{
  echo "date: $(date -u +%FT%TZ)"
  nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm --format=csv,noheader 2>&1
  python3 -c 'import torch; print("python torch", torch.__version__, "cuda", torch.version.cuda)' 2>&1
  echo "cores: $(nproc)"
} > "$out/machine.txt"
note "machine: $(head -2 "$out/machine.txt" | tail -1)"

if wants build; then
  arch="${GPU_ARCH:-$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1 | tr -d '.')}"
  arch="${arch:-90}"
  prefix="${CMAKE_PREFIX_PATH:-}"
  deps_options=()
  if [[ -f "$repo/gpu-deps/deps.tar.xz" ]]; then  # tools/pack_gpu_deps.sh
    deps="$repo/build/gpu-checks-deps"
    if [[ ! -f "$deps/unpacked" || "$repo/gpu-deps/deps.tar.xz" -nt "$deps/unpacked" ]]; then
      rm -rf "$deps" && mkdir -p "$deps" && tar -C "$deps" -xJf "$repo/gpu-deps/deps.tar.xz" && touch "$deps/unpacked" ||
        { note "gpu-deps/deps.tar.xz could not be unpacked"; exit 1; }
    fi
    prefix="$deps/usr${prefix:+;$prefix}"
    deps_lib="$deps/usr/lib/x86_64-linux-gnu"
    # DT_RPATH (not RUNPATH) also serves the libraries those libraries load.
    deps_options+=("-DCMAKE_EXE_LINKER_FLAGS=-Wl,-rpath-link,$deps_lib -Wl,--disable-new-dtags")
    command -v pkg-config >/dev/null || deps_options+=("-DPKG_CONFIG_EXECUTABLE=$deps/usr/bin/pkg-config")
    note "dependencies: gpu-deps/ ($(head -1 "$repo/gpu-deps/README.txt" 2>/dev/null))"
  fi
  if [[ ! -x .venv/bin/python ]]; then
    torch_cmake="$(python3 -c 'import torch.utils; print(torch.utils.cmake_prefix_path)' 2>/dev/null)"
    prefix="${prefix:+$prefix;}$torch_cmake"
  fi
  step configure 300 cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DKVSTUDIO_BUILD_GUI=OFF \
    "-DCMAKE_PREFIX_PATH=$prefix" "-DKVSTUDIO_CUDA_ARCHITECTURES=$arch" "-DTORCH_CUDA_ARCH_LIST=${arch:0:1}.${arch:1}" \
    "${deps_options[@]}" ||
    { note "configure failed: see configure.log"; exit 1; }
  step build 900 cmake --build "$build" -j "$jobs" --target kvs_engine_tests kvstudio-cli ||
    { note "build failed: see build.log"; exit 1; }
  # The programs must name libstdc++ before LibTorch (CMakeLists.txt says why).
  step link-order 60 ctest --test-dir "$build" -R libstdcxx_before_libtorch --output-on-failure
fi

if wants tests; then
  # Every test that runs only on a GPU, and the CPU twins they are compared with.
  step gpu-tests 300 "$build/tests/kvs_engine_tests" \
    "--gtest_filter=CudaScoring.*:SegmentScoring*:PackedAttention.*:PolicyScoringPaths.*:HostUpload.*:TokenRecord.*:SamplerRng.*:Device*:CudaGraph*:DecodeGraphs*"
  grep -E "^\[  (PASSED|FAILED|SKIPPED) " "$out/gpu-tests.log" | sort | uniq -c | tee -a "$out/summary.txt"
fi

bench() {  # bench NAME ARGS...: one bench step, its table and JSON kept
  local name=$1
  shift
  step "$name" "$limit" "$cli" bench "$@" --device cuda --json "$out/$name.json"
}
llamagen="full,linear:rho=1/6,headkv:rho=1/6,h2o:rho=1/6,streaming:rho=1/6"
# LlamaGen-B@384: batch 1 and 8, bf16 (the CUDA default), CFG 4, top-k 2000.
wants b1 && bench b1 --random llamagen-B@384 --policies "$llamagen" --batch 1 --images 1 --top-k 2000 --cfg 4 --rounds 3
wants b8 && bench b8 --random llamagen-B@384 --policies "$llamagen" --batch 8 --images 8 --top-k 2000 --cfg 4 --rounds 3
# CUDA graphs of the decode step against the eager step at batch 1, where launches bound
# the step (b1 above ran with them on, the default): the same tokens, and each table's
# last line names the path it timed.
if wants graphs; then
  for mode in on off; do
    bench "graphs-$mode" --random llamagen-B@384 --policies full,linear:rho=1/6,headkv:rho=1/6,streaming:rho=1/6 \
      --batch 1 --images 1 --top-k 2000 --cfg 4 --rounds 3 --cuda-graphs "$mode"
  done
fi
# LlamaGen-XL@384 at a large batch, and the largest batch each policy fits under 70 GiB.
wants xl && bench xl --random llamagen-XL@384 --policies full,linear:rho=1/6,headkv:rho=1/6 --batch 128 --images 128 \
  --top-k 2000 --cfg 4 --no-warmup
# MAR-B, 64 steps: LazyMAR with and without the head cache against the full computation.
wants mar && bench mar --random mar-B --steps 64 --policies full,lazymar,lazymar:head_cache=on --images 4 --batch 4 \
  --rounds 2
# The paths this engine switches between on a GPU, side by side on the same batch.
if wants compare; then
  for variant in KVSTUDIO_POLICY_SCORING=torch KVSTUDIO_CUDA_COMPACTION=off KVSTUDIO_CUDA_ATTENTION=dense; do
    step "compare-${variant%%=*}" "$limit" env "$variant" "$cli" bench --random llamagen-B@384 \
      --policies full,linear:rho=1/6,headkv:rho=1/6,h2o:rho=1/6 --batch 8 --images 8 --top-k 2000 --cfg 4 --rounds 2 \
      --device cuda
  done
fi
note "done"
