#!/usr/bin/env bash
# Lumina-mGPT speed, side by side in one run: the official generation loop of
# Alpha-VLLM/Lumina-mGPT (tools/lumina_official_speed.py: its Chameleon model and
# its solver's logits processors through transformers 4.43.3's generate) and
# `kvstudio-cli bench` (full, LineAR and HeadKV at rho = 1/8, the papers'
# Lumina-mGPT budget) on the same bundle's weights, batch 1 with CFG 4 and
# image top-k 2000, in each dtype. Prints each program's output and a summary
# line per dtype.
#
# Usage: tools/lumina_speed_vs_official.sh BUNDLE LUMINA_REPO PYTHONPATH_DIR [OUT_DIR]
#   BUNDLE          e.g. `kvstudio-cli create-random --preset lumina-mgpt-small --out DIR`
#                   (lumina-mgpt-7b where the machine holds it and has the hours)
#   LUMINA_REPO     a checkout of https://github.com/Alpha-VLLM/Lumina-mGPT
#   PYTHONPATH_DIR  transformers==4.43.3, numpy
#                   (`.venv/bin/python -m pip install --target DIR transformers==4.43.3 numpy`)
# Environment: KVSTUDIO_DTYPES ("f32" by default), KVSTUDIO_THREADS (2). Both
# programs write the bundle's own image size (768x768 for lumina-mgpt-small).
set -euo pipefail
bundle="$1" repo="$2" pydeps="$3" out_root="${4:-out/lumina-speed}"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cli="$root/build/default/app/kvstudio-cli"
threads="${KVSTUDIO_THREADS:-2}"
export LD_LIBRARY_PATH="$root/.venv/lib/python3.11/site-packages/torch/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
echo "== $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2)" >&2

for dtype in ${KVSTUDIO_DTYPES:-f32}; do
  out="$out_root/$dtype"
  mkdir -p "$out"
  echo "== official generation loop, batch 1 with CFG ($dtype)" >&2
  PYTHONPATH="$pydeps" "$root/.venv/bin/python" -W ignore "$root/tools/lumina_official_speed.py" \
    --lumina-repo "$repo" --bundle "$bundle" --dtype "$dtype" --threads "$threads" \
    | tee "$out/official.json"
  echo "== kvstudio-cli bench, batch 1 with CFG ($dtype)" >&2
  "$cli" bench --model "$bundle" --policies full,linear:rho=1/8,headkv:rho=1/8 --batch 1 --images 1 \
    --cfg 4 --top-k 2000 --threads "$threads" --dtype "$dtype" --device cpu --json "$out/kvstudio.json" \
    | tee "$out/kvstudio.txt"
  "$root/.venv/bin/python" - "$out" "$dtype" <<'PY'
import json, os, sys
out, dtype = sys.argv[1:3]
official = json.load(open(os.path.join(out, "official.json")))
rows = {r["policy"].split(":")[0]: r["tokens_per_s"] for r in json.load(open(os.path.join(out, "kvstudio.json")))}
full = rows["full"]
print(f"[{dtype} batch 1, {official['size']}] official {official['tokens_per_s']:.2f} image tokens/s; KV Studio full "
      f"{full:.2f} ({full / official['tokens_per_s']:.2f}x), LineAR 1/8 {rows['linear']:.2f} "
      f"({rows['linear'] / full:.2f}x full), HeadKV 1/8 {rows['headkv']:.2f} ({rows['headkv'] / full:.2f}x full)")
PY
done
