# Sourced by the demo recipes (var_demo_recipe.sh, mar_demo_recipe.sh,
# janus_demo_recipe.sh): the settings every recipe takes from the environment
# and the resumable training step. Set W and OUT first (each recipe has its own
# defaults).
T=${T:-build/default/app/train/kvstudio-train}
CLI=${CLI:-build/default/app/kvstudio-cli}
CLASSIFIER=${CLASSIFIER:-resources/models/shared/evaluation-classifier.safetensors}
SAMPLES=${SAMPLES:-$OUT/samples.png}
THREADS=${THREADS:-1}

# run KIND ARGS...: the training command KIND until it finishes. Each command
# stops itself before 90 minutes (exit 130) and is resumed from its checkpoint;
# $W/STOP stops the recipe between commands.
run() {
  local kind=$1
  shift
  while true; do
    [ -e "$W/STOP" ] && { echo "stop requested ($W/STOP)"; exit 130; }
    local resume=()
    [ -f "$W/$kind/checkpoint.json" ] && resume=(--resume)
    echo "== $(date -u +%FT%TZ) $T $kind $* ${resume[*]}"
    "$T" "$kind" --work "$W" --threads "$THREADS" --stop-after-minutes 89 "$@" "${resume[@]}"
    local rc=$?
    [ $rc -eq 0 ] && return 0
    [ $rc -eq 130 ] || { echo "$kind failed (exit $rc)"; exit $rc; }
  done
}
