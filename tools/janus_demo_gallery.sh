#!/usr/bin/env bash
# The prompt gallery of docs/text-to-image.md: the bundled text-to-image demo
# (resources/models/janus-pro-demo) draws four images (seeds 0-3, the bundle's
# sampling defaults, full cache) for each prompt below, through
# `kvstudio-cli generate`, into resources/docs/janus_demo/, and the Markdown
# table of prompts and images is printed for the page.
#
#   tools/janus_demo_gallery.sh > /tmp/gallery.md
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
CLI=${CLI:-build/default/app/kvstudio-cli}
MODEL=${MODEL:-resources/models/janus-pro-demo}
OUT=${OUT:-resources/docs/janus_demo}
THREADS=${THREADS:-1}
mkdir -p "$OUT"
rm -f "$OUT"/*.png

# "wording|prompt": the bundle's example prompts (train wording, pictures never
# trained on), captions in the held-out wording, and short prompts of our own.
prompts=()
while IFS= read -r p; do prompts+=("train wording|$p"); done < <(
  python3 -c 'import json,sys; [print(p) for p in json.load(open(sys.argv[1]))["example_prompts"]]' "$MODEL/model.json")
held_out=$(mktemp)
trap 'rm -f "$held_out"' EXIT
"$CLI" world --prompt-file "$held_out" --per-class 1 --seed 1000000007 \
  --classes sunset_sea,night_sky,forest,mountains,underwater,still_life >/dev/null
while IFS=$'\t' read -r _class caption; do prompts+=("held-out wording|$caption"); done < <(grep -v '^#' "$held_out")
prompts+=("short|a forest at night" "short|a desert at dawn with the sun on the right"
          "short|a lake at sunset" "short|a red and blue checkerboard tiling"
          "short|flower fields under a clear sky" "short|a city at dusk")

echo "| wording | prompt | seeds 0-3 |"
echo "|---|---|---|"
i=0
for entry in "${prompts[@]}"; do
  wording=${entry%%|*}
  prompt=${entry#*|}
  name=$(printf '%02d' "$i")
  "$CLI" generate --model "$MODEL" --prompt "$prompt" --images 4 --seed 0 --threads "$THREADS" --quiet \
    --out "$OUT/$name.png" >/dev/null
  cells=""
  for k in 0 1 2 3; do cells+="<img src=\"../$OUT/${name}_$k.png\" width=\"96\"> "; done
  echo "| $wording | $prompt | $cells|"
  i=$((i + 1))
done
