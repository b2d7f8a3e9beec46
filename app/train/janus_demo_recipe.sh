#!/usr/bin/env bash
# The recipe of the text-to-image demo bundle (resources/models/janus-pro-demo):
# the VQ tokenizer, the byte-level BPE text tokenizer learned on the captions,
# the model with Janus-Pro's generation architecture, export (with the LlamaGen
# demo's evaluation classifier) and evaluation on captions of held-out pictures.
# Every training command stops itself before 90 minutes (--stop-after-minutes 89)
# and this script resumes it until it has finished, so the script can also be
# re-run after an interruption (each step continues from its checkpoint; finished
# steps return at once). The shipped bundle trained the VQ at two threads and the
# model's first stage at one, its second and third at two (THREADS).
#
#   T=build/default/app/train/kvstudio-train W=build/train-work-janus \
#   OUT=build/janus-pro-demo app/train/janus_demo_recipe.sh
#
# Stop it cleanly: `touch $W/STOP`, then Ctrl-C / kill the running kvstudio-train
# (it checkpoints first); remove $W/STOP and run the script again to continue.
set -uo pipefail

W=${W:-build/train-work-janus}
OUT=${OUT:-build/janus-pro-demo}
# T, CLI, CLASSIFIER, SAMPLES, THREADS and the resumable `run` step.
source "$(dirname "${BASH_SOURCE[0]}")/recipe_steps.sh"

run vq --steps 4000 --batch 8 --lr 1e-3 --warmup 100 --eval-every 500 --checkpoint-every 250
echo "== $(date -u +%FT%TZ) text-tokenizer"
"$T" text-tokenizer --work "$W" --vocab-size 1024 --train-per-class 1000 --captions-per-image 4 || exit $?
run janus --steps 3200 --batch 8 --lr 8e-4 --warmup 100 --layers 6 --eval-every 400 --checkpoint-every 100 \
          --train-per-class 1000 --eval-per-class 20 --captions-per-image 4
# Second stage: the same run continued to 9,000 steps, its learning rate now the
# cosine of a 9,000-step run from 5e-4 (3.8e-4 at step 3,200; optimizer state kept).
run janus --steps 9000 --batch 8 --lr 5e-4 --warmup 100 --layers 6 --eval-every 1000 --checkpoint-every 100 \
          --train-per-class 1000 --eval-per-class 20 --captions-per-image 4
# Third stage: continued to 14,000 steps, its learning rate the cosine of a
# 14,000-step run from 8e-4 (2.9e-4 at step 9,000). The shipped model's first two
# stages read captions in the three subject-first training orders; the grammar
# then gained the two subject-last ones, which this stage (and a re-run of the
# whole recipe, every stage) trains on.
run janus --steps 14000 --batch 8 --lr 8e-4 --warmup 100 --layers 6 --eval-every 1000 --checkpoint-every 100 \
          --train-per-class 1000 --eval-per-class 20 --captions-per-image 4
echo "== $(date -u +%FT%TZ) export"
# CFG 3, not Janus-Pro's official 5: chosen on a validation set of held-out
# pictures (docs/training.md, "Guidance scale chosen on a validation set").
"$T" export --family janus-pro --work "$W" --out "$OUT" --classifier "$CLASSIFIER" --cfg 3 || exit $?
echo "== $(date -u +%FT%TZ) evaluate"
"$T" evaluate --bundle "$OUT" --work "$W" --threads "$THREADS" --samples "$SAMPLES" || exit $?
echo "== $(date -u +%FT%TZ) done"
