#!/usr/bin/env bash
# Janus-Pro through the command line as a user meets it: a folder laid out like
# the official Hugging Face download (made by tests/data/make_janus_hf_folder.py)
# converts, `info` describes it, `generate --prompt` streams an image whose PNG
# carries the prompt and negative prompt back out through `inspect`, the same
# seed gives the same image, and the wrong conditioning or an over-long prompt
# gets one clear error line.
set -u
cli="$1"
hf="$2"
work="$3"
rm -rf "$work" && mkdir -p "$work"
source "$(dirname "${BASH_SOURCE[0]}")/cli_test_lib.sh"

bundle="$work/janus-tiny"
if "$cli" convert --family janus-pro --checkpoint "$hf/safetensors" --out "$bundle" --image-size 32 >"$work/convert.txt" 2>&1 \
  && grep -q "dropped 12 tensors" "$work/convert.txt"; then pass convert; else fail "convert: $(cat "$work/convert.txt")"; fi
if "$cli" info "$bundle" >"$work/info.txt" 2>&1 && grep -q "janus-pro" "$work/info.txt" \
  && grep -q "tokenizer/tokenizer.json" "$work/info.txt"; then pass info; else fail "info: $(cat "$work/info.txt")"; fi

prompt="A photo of a cat sitting on a red sofa"
if "$cli" generate --model "$bundle" --prompt "$prompt" --negative-prompt "blurry, low quality" --seed 5 \
     --policy linear:rho=0.5 --out "$work/cat.png" --quiet >"$work/gen.txt" 2>&1; then pass generate
else fail "generate: $(cat "$work/gen.txt")"; fi
if "$cli" inspect "$work/cat.png" >"$work/inspect.txt" 2>&1 && [[ "$(head -1 "$work/inspect.txt")" == "$prompt" ]] \
  && grep -q "^Negative prompt: blurry, low quality$" "$work/inspect.txt" \
  && grep -q "KV policy: linear:rho=0.5" "$work/inspect.txt"; then pass png-round-trip
else fail "png-round-trip: $(cat "$work/inspect.txt")"; fi
"$cli" generate --model "$bundle" --prompt "$prompt" --negative-prompt "blurry, low quality" --seed 5 \
  --policy linear:rho=0.5 --out "$work/cat2.png" --quiet >/dev/null 2>&1
tokens_of() { "$cli" inspect --json "$1" | python3 -c 'import json, sys; print(json.load(sys.stdin)["tokens"])'; }
if [[ -n "$(tokens_of "$work/cat.png")" && "$(tokens_of "$work/cat.png")" == "$(tokens_of "$work/cat2.png")" ]]; then
  pass same-seed-same-tokens
else fail "the same seed gave other tokens"; fi

expect_error class-on-text-model "is a text-to-image model: give a prompt" -- generate --model "$bundle" --class 1
long=$(printf 'a%.0s' $(seq 1 700))
expect_error prompt-too-long "at most [0-9]+ prompt tokens" -- generate --model "$bundle" --prompt "$long" --out "$work/x.png"
expect_error missing-folder "has no weights|is not a folder|cannot read" -- convert --family janus-pro --checkpoint "$work/nowhere" --out "$work/y"

echo "$passes passed, $failures failed"
[[ $failures -eq 0 ]]
