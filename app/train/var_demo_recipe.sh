#!/usr/bin/env bash
# The recipe of the VAR demo bundle (resources/models/var-demo): the multi-scale
# VQVAE, the next-scale transformer, export (with the LlamaGen demo's evaluation
# classifier), evaluation and the HeatKV, HACK and AMS-KV calibrations, all at one
# thread. Every training command stops itself before 90 minutes
# (--stop-after-minutes 89) and this script resumes it until it has finished, so
# the script can also be re-run after an interruption
# (each step continues from its checkpoint; finished steps return at once).
#
#   T=build/default/app/train/kvstudio-train W=build/train-work-var \
#   OUT=build/var-demo app/train/var_demo_recipe.sh
#
# Stop it cleanly: `touch $W/STOP`, then Ctrl-C / kill the running kvstudio-train
# (it checkpoints first); remove $W/STOP and run the script again to continue.
set -uo pipefail

W=${W:-build/train-work-var}
OUT=${OUT:-build/var-demo}
# T, CLI, CLASSIFIER, SAMPLES, THREADS and the resumable `run` step.
source "$(dirname "${BASH_SOURCE[0]}")/recipe_steps.sh"

run var-vae --steps 5000 --batch 8 --lr 1e-3 --warmup 100 --eval-every 500 --checkpoint-every 250
run var     --steps 2000 --batch 8 --lr 5e-4 --warmup 100 --eval-every 500 --checkpoint-every 100 --train-per-class 1000 --eval-per-class 20
echo "== $(date -u +%FT%TZ) export"
"$T" export --family var --work "$W" --out "$OUT" --classifier "$CLASSIFIER" || exit $?
echo "== $(date -u +%FT%TZ) evaluate"
"$T" evaluate --bundle "$OUT" --work "$W" --threads "$THREADS" --samples "$SAMPLES" || exit $?
# HeatKV's head orders ship inside the bundle, so heatkv runs without a
# first-use calibration (10 calibration classes: the paper's N = 10 prompts).
echo "== $(date -u +%FT%TZ) calibrate heatkv"
"$CLI" calibrate --policy heatkv --model "$OUT" --images 10 --threads "$THREADS" || exit $?
# HACK's head classification likewise (its 10 calibration prompts in the HeatKV
# paper).
echo "== $(date -u +%FT%TZ) calibrate hack"
"$CLI" calibrate --policy hack --model "$OUT" --images 10 --threads "$THREADS" || exit $?
# AMS-KV's threshold: VAR-d30's -0.008 promotes every layer of this model; one
# image per class at the bundle's CFG places theta so a sixth of the layers are
# cache-demanding.
echo "== $(date -u +%FT%TZ) calibrate amskv"
"$CLI" calibrate --policy amskv --model "$OUT" --images 12 --cfg 4 --threads "$THREADS" || exit $?
# ScaleKV's drafter layers: the paper's 10 calibration prompts at the bundle's
# CFG, what a first scalekv run would measure (the same images either way).
echo "== $(date -u +%FT%TZ) calibrate scalekv"
"$CLI" calibrate --policy scalekv --model "$OUT" --images 10 --cfg 4 --threads "$THREADS" || exit $?
echo "== $(date -u +%FT%TZ) done"
