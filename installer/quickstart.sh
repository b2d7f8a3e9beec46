#!/usr/bin/env bash
# The two README commands:
#   installer/quickstart.sh run   install what is missing, build, run the main job:
#                                 the KV Studio window with the bundled text-to-image
#                                 demo model and a prompt filled in, generating at once;
#                                 without a display (or without the GUI build) it falls
#                                 back to kvstudio-cli generate with that prompt
#   installer/quickstart.sh test  install what is missing, build, run the whole test suite
#                                 (the format check, unit, conformance, CLI; again under
#                                 ASan+UBSan; and 45 s of fuzzing per parser of
#                                 outside files);
#                                 exits non-zero on any failure
# Extra arguments after `run` go to `kvstudio-cli generate` (e.g. --prompt "a lake at
# night" --seed 3, or --model resources/models/llamagen-demo --class 7).
# KVSTUDIO_HEADLESS=1 makes `run` use the command line even with a display.
# Environment: KVSTUDIO_PRESET (default "default"; "headless" skips the GUI),
#              KVSTUDIO_JOBS (build and test parallelism, default: all cores),
#              KVSTUDIO_SKIP_ASAN=1 / KVSTUDIO_SKIP_FUZZ=1 (test: skip those stages).
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo"
mode="${1:-}"
[[ $# -gt 0 ]] && shift
preset="${KVSTUDIO_PRESET:-default}"
jobs="${KVSTUDIO_JOBS:-$(nproc)}"

step() { printf '\n==> %s\n' "$*" >&2; }

# ccache keys on the compile command: with the repository as base dir, paths inside
# it become relative to the build folder, so a second clone (CI's) or a worktree
# reuses the objects an earlier build compiled (LibTorch headers make every
# engine file slow to compile on 2 cores).
export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$repo}"
# The ASan and fuzz presets compile with -g, and ccache then also keys on the
# build folder (debug info records it) unless told not to: without this a second
# clone recompiles the whole ASan build (about 40 minutes) while the release
# build hits. The recorded folder only matters to a debugger.
export CCACHE_NOHASHDIR="${CCACHE_NOHASHDIR:-1}"

case "$mode" in
  run|test) ;;
  *) echo "usage: installer/quickstart.sh run|test [generate options]" >&2; exit 2 ;;
esac

step "dependencies"
if [[ "$preset" == "headless" ]]; then KVSTUDIO_NO_GUI=1 bash installer/install-deps.sh; else bash installer/install-deps.sh; fi

step "configure + build ($preset)"
start=$(date +%s)
cmake --preset "$preset" >/dev/null
launch_window=0
if [[ "$mode" == "run" ]]; then
  # `run` builds what it runs: the window on a desktop where Qt 6 is installed
  # (it links the runtime alone: no benchmark, no procedural world), else the
  # command line; the test suites and tools wait for `test`.
  if [[ $# -eq 0 && "${KVSTUDIO_HEADLESS:-0}" != "1" && ( -n "${DISPLAY:-}" || -n "${WAYLAND_DISPLAY:-}" ) ]] &&
    cmake --build --preset "$preset" --target help 2>/dev/null | grep -qE '^kvstudio(:| )'; then
    launch_window=1
    targets=(kvstudio)
  else
    targets=(kvstudio-cli)
  fi
  cmake --build --preset "$preset" -j "$jobs" --target "${targets[@]}"
else
  cmake --build --preset "$preset" -j "$jobs"
fi
echo "build: $(( $(date +%s) - start )) s" >&2
cli="build/$preset/app/kvstudio-cli"

if [[ "$mode" == "run" ]]; then
  gui="build/$preset/app/gui/kvstudio"
  # The first picture: the text-to-image demo (trained on the procedural world's
  # captions, docs/text-to-image.md). The window fills in the bundle's first
  # example prompt; the command line is given the same one.
  demo_model="resources/models/janus-pro-demo"
  demo_prompt="as the sun sets, a view over the sea: three clouds, the sun at the centre, low in the sky and orange tones"
  if [[ "$launch_window" == "1" && -x "$gui" ]]; then
    step "KV Studio window (generating with the bundled text-to-image demo model)"
    exec "$gui" --model "$demo_model" --generate
  fi
  if [[ $# -eq 0 && "${KVSTUDIO_HEADLESS:-0}" != "1" ]]; then
    if ! cmake --build --preset "$preset" --target help 2>/dev/null | grep -qE '^kvstudio(:| )'; then
      echo "(the window is not part of this build: Qt 6 missing or the headless preset; using the command line)" >&2
    else echo "(no display: using the command line; on a desktop, run opens the window)" >&2; fi
  fi
  step "generate with the bundled text-to-image demo model"
  mkdir -p out
  if [[ $# -eq 0 ]]; then set -- --model "$demo_model" --prompt "$demo_prompt" --seed 0 --out out/kvstudio_demo.png; fi
  "$cli" generate "$@"
  exit 0
fi

step "tests"
status=0
# The sources follow .clang-format (a listing of the files that differ, no changes).
bash installer/check-format.sh || status=1
ctest --preset "$preset" -j "$jobs" || status=1

if [[ "${KVSTUDIO_SKIP_ASAN:-0}" != "1" ]]; then
  step "the same tests under AddressSanitizer + UBSan (asan preset)"
  cmake --preset asan >/dev/null
  cmake --build --preset asan -j "$jobs"
  ctest --preset asan -j "$jobs" || status=1
fi

if [[ "${KVSTUDIO_SKIP_FUZZ:-0}" != "1" ]]; then
  step "fuzzing the parsers of outside files (checkpoints, pickles, safetensors, model.json, PNG, tokenizer, calibration and prompt files; libFuzzer + ASan/UBSan, 45 s each)"
  cmake --preset fuzz >/dev/null
  cmake --build --preset fuzz -j "$jobs"
  ctest --preset fuzz -j "$jobs" || status=1
fi

if [[ $status -ne 0 ]]; then echo "TESTS FAILED" >&2; else echo "all tests passed" >&2; fi
exit $status
