#!/usr/bin/env bash
# LlamaGen CPU speed, side by side in one run: the official generate() of
# FoundationVision/LlamaGen (tools/llamagen_official_speed.py) and
# `kvstudio-cli bench` (full, LineAR and HeadKV at rho = 1/6) on the same
# bundle's weights, CFG 4, top-k 2000, at batch 1 and batch 8, in each dtype.
# Prints each program's output and a summary line per dtype and batch.
#
# Usage: tools/llamagen_speed_vs_official.sh BUNDLE LLAMAGEN_REPO [OUT_DIR]
#   BUNDLE         e.g. `kvstudio-cli create-random --out DIR --preset GPT-B --image-size 384 --dtype f32`
#   LLAMAGEN_REPO  a checkout of https://github.com/FoundationVision/LlamaGen
# Environment: KVSTUDIO_DTYPES ("f32 bf16" by default), KVSTUDIO_BATCHES ("1 8"),
# KVSTUDIO_THREADS (2).
set -euo pipefail
bundle="$1" repo="$2" out_root="${3:-out/llamagen-speed}"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cli="$root/build/default/app/kvstudio-cli"
threads="${KVSTUDIO_THREADS:-2}"
export LD_LIBRARY_PATH="$root/.venv/lib/python3.11/site-packages/torch/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
echo "== $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2)" >&2

for dtype in ${KVSTUDIO_DTYPES:-f32 bf16}; do
  for batch in ${KVSTUDIO_BATCHES:-1 8}; do
    out="$out_root/$dtype-b$batch"
    mkdir -p "$out"
    echo "== official generate(), batch $batch with CFG ($dtype)" >&2
    "$root/.venv/bin/python" -W ignore "$root/tools/llamagen_official_speed.py" --llamagen-repo "$repo" \
      --bundle "$bundle" --dtype "$dtype" --batch "$batch" --threads "$threads" | tee "$out/official.json"
    echo "== kvstudio-cli bench, batch $batch with CFG ($dtype)" >&2
    "$cli" bench --model "$bundle" --policies full,linear:rho=1/6,headkv:rho=1/6 --batch "$batch" --images "$batch" \
      --top-k 2000 --cfg 4 --threads "$threads" --dtype "$dtype" --device cpu --json "$out/kvstudio.json" \
      | tee "$out/kvstudio.txt"
    "$root/.venv/bin/python" - "$out" "$dtype" "$batch" <<'PY'
import json, os, sys
out, dtype, batch = sys.argv[1:4]
official = json.load(open(os.path.join(out, "official.json")))["tokens_per_s"]
rows = {r["policy"].split(":")[0]: r["tokens_per_s"] for r in json.load(open(os.path.join(out, "kvstudio.json")))}
full = rows["full"]
print(f"[{dtype} batch {batch}] official {official:.1f} image tokens/s; KV Studio full {full:.1f} ({full / official:.2f}x), "
      f"LineAR 1/6 {rows['linear']:.1f} ({rows['linear'] / full:.2f}x full), HeadKV 1/6 {rows['headkv']:.1f} "
      f"({rows['headkv'] / full:.2f}x full)")
PY
  done
done
