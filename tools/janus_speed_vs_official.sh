#!/usr/bin/env bash
# Janus-Pro speed, side by side in one run: the official generate() of
# deepseek-ai/Janus (tools/janus_official_speed.py) and `kvstudio-cli bench` on
# the same bundle's weights, batch 1 with CFG, then full vs LineAR at rho = 1/6
# at batch 8. Prints each program's JSON and a summary line.
#
# Usage: tools/janus_speed_vs_official.sh BUNDLE JANUS_REPO PYTHONPATH_DIR [OUT_DIR]
#   BUNDLE          e.g. from `kvstudio-cli create-random --preset janus-pro-1b`
#   JANUS_REPO      a checkout of https://github.com/deepseek-ai/Janus
#   PYTHONPATH_DIR  transformers==4.57.6, numpy, pillow, attrdict, einops
#                   (`.venv/bin/python -m pip install --target DIR ...`)
# Environment: KVSTUDIO_DTYPES (the dtypes both programs run in, one after the
# other; "f32 bf16" by default: f32 is the CPU's auto, bf16 what the official
# generation_inference.py casts the model to), KVSTUDIO_SKIP_BATCH8=1.
set -euo pipefail
bundle="$1" repo="$2" pydeps="$3" out_root="${4:-out/janus-speed}"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cli="$root/build/default/app/kvstudio-cli"
export LD_LIBRARY_PATH="$root/.venv/lib/python3.11/site-packages/torch/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
echo "== $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2)" >&2

for dtype in ${KVSTUDIO_DTYPES:-f32 bf16}; do
out="$out_root/$dtype"
mkdir -p "$out"

echo "== official generate(), batch 1 with CFG ($dtype)" >&2
PYTHONPATH="$pydeps" "$root/.venv/bin/python" "$root/tools/janus_official_speed.py" --janus-repo "$repo" \
  --bundle "$bundle" --dtype "$dtype" --parallel-size 1 | tee "$out/official_b1.json"

echo "== kvstudio-cli bench, batch 1 with CFG ($dtype)" >&2
"$cli" bench --model "$bundle" --policies full,linear:rho=1/6 --batch 1 --images 1 --no-warmup --quiet \
  --dtype "$dtype" --device cpu --json "$out/kvstudio_b1.json" | tee "$out/kvstudio_b1.txt"

if [[ "${KVSTUDIO_SKIP_BATCH8:-0}" != "1" ]]; then
  echo "== kvstudio-cli bench, batch 8 with CFG ($dtype)" >&2
  "$cli" bench --model "$bundle" --policies full,linear:rho=1/6 --batch 8 --images 8 --no-warmup --quiet \
    --dtype "$dtype" --device cpu --json "$out/kvstudio_b8.json" | tee "$out/kvstudio_b8.txt"
fi

"$root/.venv/bin/python" - "$out" <<'PY'
import json, os, sys
out = sys.argv[1]
official = json.load(open(os.path.join(out, "official_b1.json")))
ours = json.load(open(os.path.join(out, "kvstudio_b1.json")))
full = next(r for r in ours if r["policy"] == "full")
print(f"[{os.path.basename(out)}] batch 1: official {official['tokens_per_s']:.3f} image tokens/s, KV Studio full {full['tokens_per_s']:.3f} "
      f"({full['tokens_per_s'] / official['tokens_per_s']:.2f}x)")
b8 = os.path.join(out, "kvstudio_b8.json")
if os.path.exists(b8):
    rows = {r["policy"]: r for r in json.load(open(b8))}
    f, l = rows["full"], next(v for k, v in rows.items() if k.startswith("linear"))
    # The prompt (the same default prompt, official_b1's prompt_tokens) is kept
    # by every policy: the image-token share leaves it out.
    p, n = official["prompt_tokens"], official["image_tokens"]
    per_position = f["kv_bytes_logical"] / (p + n)
    image_share = (l["kv_bytes_logical"] - p * per_position) / (n * per_position)
    print(f"[{os.path.basename(out)}] batch 8: full {f['tokens_per_s']:.3f} tokens/s, LineAR 1/6 {l['tokens_per_s']:.3f} tokens/s "
          f"({l['tokens_per_s'] / f['tokens_per_s']:.2f}x); KV {l['kv_bytes_logical'] / f['kv_bytes_logical']:.3f} "
          f"of full, image-token cache {image_share:.3f} of full")
PY
done
