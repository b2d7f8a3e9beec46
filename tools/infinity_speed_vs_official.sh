#!/usr/bin/env bash
# Infinity speed, side by side in one run: the official generation of
# FoundationVision/Infinity (tools/infinity_official_speed.py: run_infinity.py's
# gen_one_img, or its autoregressive_infer_cfg call with B images, on the CPU in
# float32) and `kvstudio-cli bench` (full cache and HeatKV at a 10 % budget, the
# paper's Infinity default) on the same bundle's weights and prompt, CFG 3,
# tau 0.5, top-k 900, top-p 0.97, the model's 1:1 size, at each batch. Then a
# check that both programs generate the same picture: `kvstudio-cli generate`
# with the official run's prompt and seed, compared pixel by pixel with the
# official batch-1 image. Prints each program's output and a table.
#
# tokens/s on both sides is the image grid (the last scale's tokens) x images
# over the scale loop's time: the text encoder before it and the VAE decode after
# it are not counted (bench does not count them; the official JSON lists them).
#
# Usage: tools/infinity_speed_vs_official.sh BUNDLE INFINITY_REPO PYTHONPATH_DIR [OUT_DIR]
#   BUNDLE          `kvstudio-cli create-random --preset infinity-small --out DIR`
#                   (infinity-tiny for a quick try)
#   INFINITY_REPO   a checkout of https://github.com/FoundationVision/Infinity at 4c27bbb
#                   (its infinity/ and tools/ folders, e.g. from a local mirror MIRROR:
#                   `git clone --no-checkout MIRROR DIR && git -C DIR checkout 4c27bbb -- infinity tools`)
#   PYTHONPATH_DIR  `.venv/bin/python -m pip install --target DIR transformers==4.46.3 tokenizers==0.20.3
#                   sentencepiece numpy pillow pyyaml pandas opencv-python-headless einops imageio pytz`
#                   then `... --target DIR --no-deps timm==0.9.6 torchvision` (no-deps: pip would
#                   otherwise bring a second torch; the venv's is the one that runs)
# Environment: KVSTUDIO_THREADS (2), KVSTUDIO_BATCHES ("1 4"), KVSTUDIO_PROMPT.
set -euo pipefail
bundle="$1" repo="$2" pydeps="$3" out="${4:-out/infinity-speed}"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cli="$root/build/default/app/kvstudio-cli"
py="$root/.venv/bin/python"
threads="${KVSTUDIO_THREADS:-2}"
prompt="${KVSTUDIO_PROMPT:-a dense forest of pines at golden hour in the evening}"
sampling=(--cfg 3 --temperature 0.5 --top-k 900 --top-p 0.97)
export LD_LIBRARY_PATH="$root/.venv/lib/python3.11/site-packages/torch/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
mkdir -p "$out"
cpu_model="$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')"
# The flags that decide the kernels on both sides.
cpu_flags="$(grep -m1 '^flags' /proc/cpuinfo | tr ' ' '\n' | grep -E '^(avx|avx2|fma|f16c|avx512[a-z_0-9]*|amx[a-z_0-9]*)$' | tr '\n' ' ')"
echo "== $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores: $cpu_model; flags: $cpu_flags; load average: $(cut -d' ' -f1-3 /proc/loadavg)" \
  | tee "$out/machine.txt" >&2
printf '%s\n' "$prompt" > "$out/prompts.txt"

for batch in ${KVSTUDIO_BATCHES:-1 4}; do
  echo "== official Infinity, batch $batch with CFG (f32, $threads threads)" >&2
  image_arg=()
  [[ "$batch" == 1 ]] && image_arg=(--image-out "$out/official_b1.png")
  PYTHONPATH="$pydeps" "$py" -W ignore "$root/tools/infinity_official_speed.py" --infinity-repo "$repo" \
    --bundle "$bundle" --batch "$batch" --threads "$threads" --prompt "$prompt" "${image_arg[@]}" \
    | tee "$out/official_b$batch.json"
  echo "== kvstudio-cli bench, batch $batch with CFG (f32, $threads threads)" >&2
  rm -f "$out/heatkv_b$batch.failed"
  if ! "$cli" bench --model "$bundle" --prompts "$out/prompts.txt" --policies full,heatkv:budget=0.1 \
      --images "$batch" --batch "$batch" "${sampling[@]}" --dtype f32 --threads "$threads" --device cpu \
      --quiet --json "$out/kvstudio_b$batch.json" 2> "$out/kvstudio_b$batch.err" | tee "$out/kvstudio_b$batch.txt"; then
    # HeatKV on Infinity needs its calibration: without it the full cache is still measured.
    cat "$out/kvstudio_b$batch.err" >&2
    grep -v '^\s*$' "$out/kvstudio_b$batch.err" | tail -n 1 > "$out/heatkv_b$batch.failed" || true
    echo "== HeatKV did not run; kvstudio-cli bench, full cache only" >&2
    "$cli" bench --model "$bundle" --prompts "$out/prompts.txt" --policies full --images "$batch" --batch "$batch" \
      "${sampling[@]}" --dtype f32 --threads "$threads" --device cpu --quiet --json "$out/kvstudio_b$batch.json" \
      | tee "$out/kvstudio_b$batch.txt"
  fi
done

check=""
if [[ -f "$out/official_b1.png" ]]; then
  echo "== same picture? kvstudio-cli generate with the official run's prompt and seed 0" >&2
  "$cli" generate --model "$bundle" --prompt "$prompt" --seed 0 "${sampling[@]}" --dtype f32 --threads "$threads" \
    --device cpu --quiet --out "$out/kvstudio_b1.png" >&2
  check="$out/kvstudio_b1.png"
fi

PYTHONPATH="$pydeps" "$py" - "$out" "${KVSTUDIO_BATCHES:-1 4}" "$check" <<'PY'
import json, math, os, sys
out, batches, check = sys.argv[1], sys.argv[2].split(), sys.argv[3]
print(open(os.path.join(out, "machine.txt")).read().strip())
rows = []
for b in batches:
    official = json.load(open(os.path.join(out, f"official_b{b}.json")))
    ours = {r["policy"].split(":")[0]: r for r in json.load(open(os.path.join(out, f"kvstudio_b{b}.json")))}
    full = ours["full"]
    if list(full["grid"]) != official["grid"]:
        print(f"!! batch {b}: the grids differ (official {official['grid']}, KV Studio {full['grid']}): "
              "the two runs did not make the same size")
    failed = os.path.join(out, f"heatkv_b{b}.failed")
    heat = ours.get("heatkv")
    note = ""
    if heat is None:
        why = open(failed).read().strip() if os.path.exists(failed) else "not in the bench's records"
        note = f"HeatKV did not run: {why}"
    rows.append((b, official, full, heat, note))
print(f"{rows[0][1]['model']}, {rows[0][1]['size']} ({rows[0][1]['scales']} scales, {rows[0][1]['schedule_tokens']} "
      f"tokens, grid {rows[0][1]['grid'][0]}x{rows[0][1]['grid'][1]}), f32, {rows[0][1]['threads']} threads; "
      f"official Infinity {rows[0][1]['commit'][:7]} on torch {rows[0][1]['torch']}, "
      f"transformers {rows[0][1]['transformers']}")
print("image tokens/s (the grid x images over the scale loop; text encoder and VAE decode not counted)")
print("| batch | official | KV Studio full | full / official | HeatKV 10 % | HeatKV / full |")
print("|---|---|---|---|---|---|")
for b, official, full, heat, note in rows:
    o, f = official["tokens_per_s"], full["tokens_per_s"]
    h = f"{heat['tokens_per_s']:.2f} | {heat['tokens_per_s'] / f:.2f}x" if heat else "did not run | -"
    print(f"| {b} | {o:.2f} | {f:.2f} | {f / o:.2f}x | {h} |")
for b, official, full, heat, note in rows:
    print(f"batch {b}: official call {official['call_s']:.1f} s = text encoder {official['encode_prompt_s']:.1f} s "
          f"+ scale loop {official['scale_loop_s']:.1f} s + VAE decode {official['vae_decode_s']:.1f} s; "
          f"KV Studio full {full['generation_ms'] / 1000:.1f} s"
          + (f", HeatKV {heat['generation_ms'] / 1000:.1f} s (KV {heat['kv_bytes_peak'] / full['kv_bytes_peak']:.3f} "
             f"of full at its peak)" if heat else ""))
    targets = [f"full >= 2x official: {'met' if full['tokens_per_s'] >= 2 * official['tokens_per_s'] else 'missed'}"]
    targets.append(f"HeatKV 10 % >= 1.2x full: {'met' if heat['tokens_per_s'] >= 1.2 * full['tokens_per_s'] else 'missed'}"
                   if heat else note)
    print(f"batch {b} targets: " + "; ".join(targets))
if check:
    import numpy as np
    from PIL import Image
    a = np.asarray(Image.open(os.path.join(out, "official_b1.png")).convert("RGB")).astype(np.float64)
    k = np.asarray(Image.open(check).convert("RGB")).astype(np.float64)
    if a.shape != k.shape:
        print(f"check: the official image is {a.shape[1]}x{a.shape[0]}, KV Studio's {k.shape[1]}x{k.shape[0]}: NOT the same")
    else:
        mse = float(((a - k) ** 2).mean())
        psnr = math.inf if mse == 0 else 10 * math.log10(255 ** 2 / mse)
        print(f"check: same prompt, seed 0, CFG 3, tau 0.5, top-k 900, top-p 0.97: the official batch-1 image and "
              f"`kvstudio-cli generate`'s: PSNR {psnr:.2f} dB, {100 * float((a == k).mean()):.2f} % of the values "
              f"equal, {100 * float((abs(a - k) <= 1).mean()):.2f} % within 1 "
              "(the same bits give equal images up to rounding; a flipped bit changes a patch)")
PY
