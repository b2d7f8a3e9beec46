#!/usr/bin/env bash
# kvstudio-train's MAR commands end to end on a tiny budget: kl-vae, mar, export
# --family mar and evaluate (through the engine's generation session), then a
# resume of a finished run. Usage: train_mar_smoke.sh KVSTUDIO_TRAIN CLASSIFIER WORK
set -euo pipefail
T=$1
CLASSIFIER=$2
W=$3
rm -rf "$W"
small=(--work "$W" --steps 2 --batch 2 --train-per-class 1 --eval-per-class 1 --log-every 1 --threads 1)
"$T" kl-vae "${small[@]}" >/dev/null
"$T" mar "${small[@]}" >/dev/null
# A finished run resumes to "already trained" and exits 0.
"$T" mar "${small[@]}" --resume >/dev/null
# Without the VAE run, mar says which command to run first.
if "$T" mar --work "$W/empty" --steps 1 2>"$W/err.txt"; then echo "mar without a VAE succeeded"; exit 1; fi
grep -q "kvstudio-train kl-vae" "$W/err.txt"
"$T" export --family mar --work "$W" --out "$W/bundle" --dtype f32 --steps 4 --classifier "$CLASSIFIER" >/dev/null
grep -q '"family": "mar"' "$W/bundle/model.json"
"$T" evaluate --bundle "$W/bundle" --work "$W" --generated 12 --reference 12 --batch 12 --samples "$W/samples.png" \
  --samples-per-class 1 >/dev/null
grep -q '"tokenizer_psnr_db"' "$W/bundle/model.json"
grep -q '"demo_fid"' "$W/bundle/model.json"
test -s "$W/samples.png"
echo "kvstudio-train MAR smoke: ok"
