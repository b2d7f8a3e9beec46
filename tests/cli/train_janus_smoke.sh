#!/usr/bin/env bash
# kvstudio-train's text-to-image commands end to end on a tiny budget: vq,
# text-tokenizer, janus, export --family janus-pro (which ships the encoder half
# of the image tokenizer), then training on from the exported bundle alone: an
# encoder fitted to its frozen decoder (vq --decoder-from) and the generator
# continued from it with mirrored pictures (janus --init-from --mirror), and the
# refusals that keep such a run honest.
# Usage: train_janus_smoke.sh KVSTUDIO_TRAIN KVSTUDIO_CLI CLASSIFIER WORK
set -euo pipefail
T=$1
CLI=$2
CLASSIFIER=$3
W=$4
rm -rf "$W"
common=(--steps 2 --batch 2 --train-per-class 1 --eval-per-class 1 --log-every 1 --threads 1)
vq_small=(--ch 32 --ch-mult 1,1,2 --z-channels 16 --codebook-size 32 --codebook-dim 4 --image-size 32)
lm_small=(--hidden 32 --layers 1 --heads 2 --intermediate 64 --context 256)
"$T" vq --work "$W/a" "${common[@]}" "${vq_small[@]}" >/dev/null
"$T" text-tokenizer --work "$W/a" --vocab-size 300 --train-per-class 2 --captions-per-image 2 >/dev/null
"$T" janus --work "$W/a" "${common[@]}" "${lm_small[@]}" --captions-per-image 2 >/dev/null
"$T" export --family janus-pro --work "$W/a" --out "$W/bundle" --dtype f16 --classifier "$CLASSIFIER" >/dev/null
grep -q '"vq_encoder": "vq-encoder.safetensors"' "$W/bundle/model.json"
test -s "$W/bundle/vq-encoder.safetensors"
"$CLI" generate --model "$W/bundle" --prompt "a lake at night" --seed 1 --out "$W/first.png" >/dev/null
test -s "$W/first.png"

# Training on from the bundle alone (a fresh work folder: no run of the first one).
mkdir -p "$W/b/text-tokenizer"
cp "$W/bundle/tokenizer/"* "$W/b/text-tokenizer/"
# Without an encoder fitted to the bundle's decoder, --init-from refuses.
"$T" vq --work "$W/b" "${common[@]}" "${vq_small[@]}" >/dev/null
if "$T" janus --work "$W/b" "${common[@]}" --init-from "$W/bundle" --captions-per-image 2 2>"$W/err.txt" >/dev/null; then
  echo "janus --init-from accepted an image tokenizer of another decoder"; exit 1
fi
grep -q "was not fitted to the decoder of" "$W/err.txt"
# Size options contradict the bundle's tokenizer.
if "$T" vq --work "$W/c" "${common[@]}" --decoder-from "$W/bundle" --ch 64 2>"$W/err.txt" >/dev/null; then
  echo "vq --decoder-from accepted --ch"; exit 1
fi
grep -q -- "--ch cannot be combined with --decoder-from" "$W/err.txt"
rm -rf "$W/b/vq"
"$T" vq --work "$W/b" "${common[@]}" --decoder-from "$W/bundle" >/dev/null
grep -q '"decoder_from"' "$W/b/vq/checkpoint.json"
"$T" janus --work "$W/b" "${common[@]}" --steps 3 --init-from "$W/bundle" --mirror --captions-per-image 2 >"$W/janus.txt"
grep -q '"mirror": true' "$W/b/janus/checkpoint.json"
# A finished run resumes to "already trained".
"$T" janus --work "$W/b" "${common[@]}" --steps 3 --init-from "$W/bundle" --mirror --captions-per-image 2 --resume >/dev/null
"$T" export --family janus-pro --work "$W/b" --out "$W/bundle2" --dtype f16 --classifier "$CLASSIFIER" >/dev/null
grep -q '"started_from"' "$W/bundle2/model.json"
test -s "$W/bundle2/vq-encoder.safetensors"
"$CLI" generate --model "$W/bundle2" --prompt "a lake at night" --seed 1 --out "$W/second.png" >/dev/null
test -s "$W/second.png"
echo "kvstudio-train text-to-image smoke: ok"
