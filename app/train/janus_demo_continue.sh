#!/usr/bin/env bash
# Training the shipped text-to-image demo on, from its bundle alone (the run
# folder of janus_demo_recipe.sh is not kept in the repository): an encoder is
# fitted to the bundle's frozen decoder and codebook, so that pictures become the
# codes the generator reads, then the generator continues from the bundle's
# weights (a fresh optimizer) on the training pictures and their mirror images,
# captioned with the sides swapped, and the result is exported and evaluated.
# A bundle that ships its encoder (files.vq_encoder, written by every export
# since) starts the fit from it. Each training command stops itself before 90
# minutes and is resumed, as in the other recipes.
#
#   T=build/default/app/train/kvstudio-train BUNDLE=resources/models/janus-pro-demo \
#   W=build/train-work-janus-on OUT=build/janus-pro-demo-on app/train/janus_demo_continue.sh
#
# Stop it cleanly: `touch $W/STOP`, then kill the running kvstudio-train (it
# checkpoints first); remove $W/STOP and run the script again to continue.
set -uo pipefail

BUNDLE=${BUNDLE:-resources/models/janus-pro-demo}
W=${W:-build/train-work-janus-on}
OUT=${OUT:-build/janus-pro-demo-on}
# How far the generator trains on and at what learning rate (cosine from LR after
# WARMUP steps; AdamW starts afresh).
STEPS=${STEPS:-6000}
LR=${LR:-3e-4}
WARMUP=${WARMUP:-200}
source "$(dirname "${BASH_SOURCE[0]}")/recipe_steps.sh"

run vq --decoder-from "$BUNDLE" --steps 1500 --batch 8 --lr 1e-3 --warmup 100 --eval-every 500 --checkpoint-every 250
# The bundle's text tokenizer is the one the generator was trained with.
mkdir -p "$W/text-tokenizer"
cp "$BUNDLE/tokenizer/"* "$W/text-tokenizer/" || exit $?
run janus --init-from "$BUNDLE" --mirror --steps "$STEPS" --batch 8 --lr "$LR" --warmup "$WARMUP" --eval-every 1000 \
          --checkpoint-every 100 --train-per-class 1000 --eval-per-class 20 --captions-per-image 4
echo "== $(date -u +%FT%TZ) export"
"$T" export --family janus-pro --work "$W" --out "$OUT" --classifier "$CLASSIFIER" --cfg 3 || exit $?
echo "== $(date -u +%FT%TZ) evaluate"
"$T" evaluate --bundle "$OUT" --work "$W" --threads "$THREADS" --samples "$SAMPLES" || exit $?
echo "== $(date -u +%FT%TZ) done"
