#!/usr/bin/env bash
# Submits a kvstudio-cli bench to Slurm as N shards (a job array, one GPU per
# task; bench-shard.sbatch) and a merge that starts when every shard has
# finished successfully (bench-merge.sbatch). DIR must be on a file system that
# every node sees; the shards write their own files into it.
# Usage: installer/slurm/submit-bench.sh N DIR [--sbatch "SBATCH OPTIONS"] BENCH-OPTIONS...
#   e.g. installer/slurm/submit-bench.sh 8 /shared/bench-b384 --sbatch "--partition=gpu --time=02:00:00" \
#          --random llamagen-B@384 --policies full,linear:rho=1/6 --images 512 --batch 16 --device cuda
# Prints the two job ids. Environment: KVSTUDIO_CLI (passed on to the jobs).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
if [[ $# -lt 3 ]]; then
  sed -n '2,10p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2
  exit 2
fi
shards="$1"
out="$2"
shift 2
extra=()
if [[ "${1:-}" == "--sbatch" ]]; then
  read -r -a extra <<<"$2"
  shift 2
fi
if ! [[ "$shards" =~ ^[1-9][0-9]*$ ]]; then
  echo "submit-bench: the shard count must be a positive number, got '$shards'" >&2
  exit 2
fi
mkdir -p "$out"
out="$(cd "$out" && pwd)"
array=$(sbatch --parsable "${extra[@]}" --array="0-$((shards - 1))" "$here/bench-shard.sbatch" "$out" "$@")
array="${array%%;*}"
merge=$(sbatch --parsable "${extra[@]}" --dependency="afterok:${array}" "$here/bench-merge.sbatch" "$out")
merge="${merge%%;*}"
echo "shards: job array ${array} (${shards} tasks); merge: job ${merge}, after all of them; results in ${out}"
