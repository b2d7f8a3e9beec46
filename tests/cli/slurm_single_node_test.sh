#!/usr/bin/env bash
# installer/slurm/ on a real single-node Slurm cluster: starts munged, slurmctld
# and slurmd (Debian 12's slurmctld, slurmd and munge packages) with a private
# configuration under WORK (one node with one GPU resource that is counted,
# /dev/null standing for the device, so the tasks run one after the other),
# submits a policy x budget sweep of the demo model (images saved) as SHARDS
# shards (default 4) and the merge with installer/slurm/submit-bench.sh, waits
# for the merge, and checks that what it wrote equals the one-process bench:
# bench.json in every judged field, and the chart and the grid pixel for pixel.
# Needs root (the daemons run as root) and exits 77 (skipped) without the
# packages. Not part of ctest: it starts system daemons. The daemons are
# stopped at the end.
# Usage: tests/cli/slurm_single_node_test.sh KVSTUDIO_CLI WORK [SHARDS]
set -u
cli="$(readlink -f "$1")"
work="$2"
shards="${3:-4}"
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
for tool in slurmctld slurmd munged sbatch scontrol; do
  if ! command -v "$tool" >/dev/null && [[ ! -x /usr/sbin/$tool ]]; then
    echo "skipped: $tool is not installed (apt-get install slurmctld slurmd slurm-client munge)"
    exit 77
  fi
done
if [[ $(id -u) -ne 0 ]]; then echo "skipped: the daemons need root"; exit 77; fi
rm -rf "$work" && mkdir -p "$work/etc" "$work/state" "$work/spool" "$work/log"
work="$(cd "$work" && pwd)"
node="$(hostname -s)"
cpus="$(nproc)"
cat >"$work/etc/slurm.conf" <<CONF
ClusterName=kvstudio-test
SlurmctldHost=$node
AuthType=auth/munge
SlurmUser=root
SlurmdUser=root
SlurmctldPort=16817
SlurmdPort=16818
StateSaveLocation=$work/state
SlurmdSpoolDir=$work/spool
SlurmctldPidFile=$work/slurmctld.pid
SlurmdPidFile=$work/slurmd.pid
SlurmctldLogFile=$work/log/slurmctld.log
SlurmdLogFile=$work/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
MpiDefault=none
JobCompType=jobcomp/none
AccountingStorageType=accounting_storage/none
GresTypes=gpu
NodeName=$node CPUs=$cpus Gres=gpu:1 State=UNKNOWN
PartitionName=test Nodes=$node Default=YES MaxTime=INFINITE State=UP
CONF
# A GPU resource that is only counted: the test runs on the CPU (--device cpu).
echo "NodeName=$node Name=gpu File=/dev/null" >"$work/etc/gres.conf"
export SLURM_CONF="$work/etc/slurm.conf"

started_munge=0
if ! pgrep -x munged >/dev/null; then
  mkdir -p /run/munge && chown munge:munge /run/munge
  runuser -u munge -- /usr/sbin/munged && started_munge=1
fi
/usr/sbin/slurmctld -i -f "$SLURM_CONF"
/usr/sbin/slurmd -f "$SLURM_CONF"
stop() {
  for pid_file in "$work/slurmd.pid" "$work/slurmctld.pid"; do
    [[ -f "$pid_file" ]] && kill "$(cat "$pid_file")" 2>/dev/null
  done
  if [[ $started_munge -eq 1 && -f /run/munge/munged.pid ]]; then kill "$(cat /run/munge/munged.pid)" 2>/dev/null; fi
}
trap stop EXIT
for _ in $(seq 60); do
  sinfo -h -o %T 2>/dev/null | grep -q idle && break
  sleep 1
done
sinfo

# Full, StreamingLLM and LineAR at two budgets: five specs, one run of one image
# per shard.
bench=(--policies full,streaming,linear --sweep rho=1/2,1/4 --images "$shards" --batch 1 --classes 0,5,7,2
       --threads 1 --no-warmup --quiet --device cpu --dtype f32)
echo "one process:"
"$cli" bench "${bench[@]}" --json "$work/whole.json" --chart "$work/whole-chart.png" --grid "$work/whole-grid.png" \
    || { echo "FAIL the one-process bench"; exit 1; }
cd "$work"
submitted=$(KVSTUDIO_CLI="$cli" "$repo/installer/slurm/submit-bench.sh" "$shards" "$work/out" --sbatch "--cpus-per-task=1" \
            "${bench[@]}" --save-images) || { echo "FAIL submit: $submitted"; exit 1; }
echo "$submitted"
merge_job=$(sed -n 's/.*merge: job \([0-9]*\).*/\1/p' <<<"$submitted")
state=""
for _ in $(seq 600); do
  state=$(scontrol show job "$merge_job" 2>/dev/null | sed -n 's/.*JobState=\([A-Z_]*\).*/\1/p')
  [[ "$state" == COMPLETED || "$state" == FAILED || "$state" == CANCELLED || "$state" == TIMEOUT ]] && break
  sleep 1
done
echo "merge job $merge_job: $state"
cat "$work"/kvstudio-bench-merge-*.out 2>/dev/null
python3 - "$work/whole.json" "$work/out/bench.json" <<'PY' || { echo "FAIL merged records"; exit 1; }
import json, math, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
timing = {"generation_ms", "tokens_per_s", "speedup_vs_full", "process_peak_bytes", "process_peak_is_own",
          "process_rss_delta_bytes"}
for ra, rb in zip(a, b):
    for k in ra:
        if k in timing:
            continue
        assert ra[k] == rb[k], (ra["policy"], k, ra[k], rb[k])  # demo-FID too: the same bits
assert len(a) == len(b) == 5
print("bench.json: %d records equal in every judged field, demo-FID to the bit" % len(a))
PY
ls "$work"/out
[[ "$state" == COMPLETED && -f "$work/out/bench.png" && -f "$work/out/grid.png" ]] || { echo "FAIL merge job $state"; exit 1; }
# The PNGs are written the same way from the same pixels, so equal pictures are equal files.
cmp "$work/whole-chart.png" "$work/out/bench.png" || { echo "FAIL the chart differs"; exit 1; }
cmp "$work/whole-grid.png" "$work/out/grid.png" || { echo "FAIL the grid differs"; exit 1; }
echo "chart and grid: byte for byte the one-process bench's"
echo "ok   slurm: $shards shards as a job array and the dependent merge give the one-process table, chart and grid"
