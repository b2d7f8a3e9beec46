#!/usr/bin/env bash
# The long fuzz runs of docs/reliability.md: one CPU-hour of libFuzzer per target
# (BUDGET_CPU_S to change it), one target at a time, at the lowest priority so
# that the machine stays usable. The budget is the fuzzer's own CPU time, read
# from /proc, not wall time: on a shared machine a wall-time hour can be a few
# CPU-minutes. -timeout=60 for the same reason: a starved process must not report
# a 0.1 s input as a 10 s hang, and a "timeout" whose input replays in under a
# CPU-second resumes the run (see below). The fuzzer is stopped with SIGINT, so
# it prints its final statistics (-print_final_stats=1). Usage (after
# `cmake --build --preset fuzz`):
#   tests/fuzz/long_runs.sh [TARGET...]   (default: every target)
# Logs: build/fuzz/tests/fuzz/long/<target>.log (a resumed run: <target>.partN.log);
# findings: long/<target>/crash-*, timeout-*, oom-*; one line per target start,
# resume and end in long/progress.txt.
set -uo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$repo/build/fuzz/tests/fuzz" || { echo "build the fuzz preset first" >&2; exit 2; }
budget=${BUDGET_CPU_S:-3600}
ticks=$(getconf CLK_TCK)
targets=("$@")
[[ ${#targets[@]} -eq 0 ]] && targets=(torch_checkpoint pickle safetensors model_manifest png_metadata tokenizer calibration bench_prompts)
for t in "${targets[@]}"; do
  [[ -x ./${t}_fuzzer ]] || { echo "no fuzzer ${t}_fuzzer" >&2; exit 2; }
  dict="$repo/tests/fuzz/dictionaries/$t.dict"
  dict_arg=()
  [[ -f "$dict" ]] && dict_arg=("-dict=$dict")
  seeds=("$repo/tests/fuzz/corpus/$t")
  [[ -d "$repo/tests/fuzz/regressions/$t" ]] && seeds+=("$repo/tests/fuzz/regressions/$t")
  mkdir -p "long/$t"
  echo "$t start $(date -u +%FT%TZ)" >> long/progress.txt
  start=$(date +%s)
  spent=0
  part=0
  while ((spent < budget)); do
    part=$((part + 1))
    log="long/$t.log"
    ((part > 1)) && log="long/$t.part$part.log"
    nice -n 19 "./${t}_fuzzer" -max_total_time=360000 -max_len=20480 -timeout=60 -rss_limit_mb=2048 \
      -print_final_stats=1 "${dict_arg[@]}" "-artifact_prefix=long/$t/" "long/$t" "${seeds[@]}" > "$log" 2>&1 &
    pid=$!
    cpu=0
    while kill -0 "$pid" 2>/dev/null; do
      sleep 20
      now=$(awk -v hz="$ticks" '{print int(($14 + $15) / hz)}' "/proc/$pid/stat" 2>/dev/null) && cpu=$now
      if ((spent + cpu >= budget)); then kill -INT "$pid" 2>/dev/null; fi
    done
    wait "$pid"
    rc=$?
    spent=$((spent + cpu))
    # libFuzzer times a unit by the wall clock, so a fuzzer starved of CPU (or
    # stopped with SIGSTOP) reports a "timeout" on an input that runs in
    # milliseconds. Replay the input: if it takes under a CPU-second it was the
    # clock, not the input; keep it as false-timeout-* and go on with the same
    # corpus for the rest of the budget. A real hang ends the target's run.
    if ((rc == 70)); then
      unit=$(ls -t "long/$t"/timeout-* 2>/dev/null | head -1)
      if [[ -n "$unit" ]]; then
        /usr/bin/time -o "long/$t.replay" -f "%U %S" timeout 120 "./${t}_fuzzer" -runs=1 "$unit" > /dev/null 2>&1
        if tail -1 "long/$t.replay" | awk 'NF == 2 { exit !($1 + $2 < 1) } { exit 1 }'; then
          mv "$unit" "long/$t/false-$(basename "$unit")"
          echo "$t false timeout (replays in under a CPU-second) at cpu_s=$spent, resuming $(date -u +%FT%TZ)" >> long/progress.txt
          continue
        fi
      fi
    fi
    break
  done
  echo "$t end rc=$rc cpu_s=$spent parts=$part wall_s=$(($(date +%s) - start)) $(date -u +%FT%TZ)" >> long/progress.txt
done
