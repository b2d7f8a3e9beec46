#!/usr/bin/env bash
# Command-line behaviour as a user meets it: bad input gives one clear error line
# and a non-zero exit (never a crash), generate writes PNGs with metadata, and the
# same seed gives the same tokens.
set -u
cli="$1"
work="$2"
rm -rf "$work" && mkdir -p "$work"
source "$(dirname "${BASH_SOURCE[0]}")/cli_test_lib.sh"
# KVSTUDIO_CLI_TESTS_SCOPE=errors (the sanitizer build's run) leaves out the
# blocks that are mostly generation and bench work on the demo model (marked
# below): under the sanitizers they made this the longest test of the test
# command, while the engine's generation paths run there in engine_tests, the
# storm and the conformance runs of `kvstudio-cli verify`. Every error path,
# info and the calibration commands still run.
full_scope=1
[[ "${KVSTUDIO_CLI_TESTS_SCOPE:-all}" == errors ]] && full_scope=0
# Every `generate` below records its image in the gallery: one of this run's
# own, never the home folder's (the gallery's checks use galleries of their own).
export KVSTUDIO_GALLERY_DIR="$work/gallery"

expect_error unknown-command "unknown command 'frobnicate'" -- frobnicate
expect_error unknown-option "unknown option --bogus" -- generate --class 1 --bogus
expect_error missing-value "option --seed needs a value" -- generate --class 1 --seed
expect_error bad-number "option --cfg expects a number, got 'abc'" -- generate --class 1 --cfg abc
expect_error missing-class "missing required option --class" -- generate

# Prompts: a class model refuses one with the session's message; options of the
# other conditioning and empty or missing prompts are refused by name.
demos="$(dirname "${BASH_SOURCE[0]}")/../../resources/models"
expect_error prompt-on-class-model "model llamagen-demo is class-conditional: give class ids \(--class N\), not a prompt" -- generate --model "$demos/llamagen-demo" --prompt "a fox" --out "$work/x.png"
expect_error prompt-and-file "give --prompt or --prompt-file, not both" -- generate --prompt "a" --prompt-file "$work/p.txt"
expect_error empty-prompt "option --prompt needs text" -- generate --prompt ""
expect_error missing-prompt-file "prompt file $work/none.txt cannot be read" -- generate --prompt-file "$work/none.txt"
printf '\n\n' >"$work/blank.txt"
expect_error blank-prompt-file "prompt file $work/blank.txt is empty" -- generate --prompt-file "$work/blank.txt"
expect_error images-with-class "option --images applies to a prompt; classes take --batch N" -- generate --class 1 --images 2
expect_error batch-with-prompt "option --batch applies to --class; a prompt takes --images N" -- generate --prompt "a" --batch 2
expect_error negative-without-prompt "a negative prompt needs a prompt" -- generate --class 1 --negative-prompt "blur" --out "$work/x.png"
if "$cli" generate --help | grep -q -- '--prompt TEXT' && "$cli" generate --help | grep -q -- '--negative-prompt'; then
  pass generate-help-prompt
else
  fail generate-help-prompt
fi
expect_error class-out-of-range "class 99 does not exist: model llamagen-demo has 12 classes" -- generate --class 99 --out "$work/x.png" --quiet
expect_error bad-top-p "top-p must be in \(0, 1\]" -- generate --class 1 --top-p 2 --out "$work/x.png"
# --device cuda: works where a GPU is present, else one clear error line.
if "$cli" generate --class 1 --device cuda --out "$work/cuda.png" --quiet >/dev/null 2>&1; then
  pass "device-cuda (GPU present)"
else
  expect_error no-cuda "--device cuda requested but no CUDA device is available" -- generate --class 1 --device cuda --out "$work/x.png" --quiet
fi
expect_error unknown-device "unknown device 'tpu' \(expected auto, cpu, cuda or cuda:N\)" -- generate --class 1 --device tpu --out "$work/x.png"
# --device cuda:N: a malformed index, and a GPU that is not present, refused with
# how many are (every command that takes --device parses it the same way).
expect_error bad-gpu-index "unknown device 'cuda:x'" -- generate --class 1 --device cuda:x --out "$work/x.png"
absent="--device cuda:63 requested but (no CUDA device is available|only [0-9]+ CUDA devices? (is|are) present)"
expect_error absent-gpu "$absent" -- generate --class 1 --device cuda:63 --out "$work/x.png" --quiet
expect_error bench-absent-gpu "$absent" -- bench --policies full --device cuda:63 --quiet
for command in generate bench verify calibrate; do
  if "$cli" "$command" --help | grep -q -- 'cuda:N'; then pass "$command-help-cuda-index"; else fail "$command-help-cuda-index"; fi
done
expect_error unknown-dtype "unknown dtype 'xyz' \(expected auto, f32, bf16 or f16\)" -- generate --class 1 --dtype xyz --out "$work/x.png"
expect_error bench-unknown-dtype "unknown dtype 'fp8'" -- bench --policies full --dtype fp8
expect_error info-unknown-dtype "unknown dtype 'f64'" -- info --dtype f64
expect_error calibrate-unknown-dtype "unknown dtype 'int8'" -- calibrate --policy heatkv --dtype int8
expect_error bad-cuda-graphs "cuda graphs must be on or off, got 'maybe'" -- generate --class 1 --cuda-graphs maybe --out "$work/x.png"
expect_error bench-bad-cuda-graphs "cuda graphs must be on or off, got 'auto'" -- bench --policies full --cuda-graphs auto
expect_error missing-model "model $work/nope: does not exist" -- generate --model "$work/nope" --class 1
expect_error not-png "--out must name a .png file" -- generate --class 1 --out "$work/x.jpg"
expect_error info-missing "does not exist" -- info "$work/nope"

# A corrupt bundle: truncated weights.
mkdir -p "$work/corrupt"
"$cli" create-random --out "$work/corrupt" --seed 1 >/dev/null
head -c 100000 "$work/corrupt/weights.safetensors" > "$work/corrupt/w" && mv "$work/corrupt/w" "$work/corrupt/weights.safetensors"
expect_error corrupt-bundle "weights.safetensors: .*truncated" -- generate --model "$work/corrupt" --class 1 --out "$work/x.png"
expect_error corrupt-info "truncated" -- info "$work/corrupt"
# A text file in place of checkpoints.
echo "hello" > "$work/fake.pt"
expect_error text-as-checkpoint "not a PyTorch checkpoint" -- convert --quiet --family llamagen --checkpoint "$work/fake.pt" --tokenizer "$work/fake.pt" --out "$work/conv"
expect_error convert-missing "does not exist" -- convert --family llamagen --checkpoint "$work/none.pt" --tokenizer "$work/none.pt" --out "$work/conv"
expect_error convert-family "unknown --family 'parti'" -- convert --family parti --checkpoint a --tokenizer b --out c
expect_error verify-missing "does not exist" -- verify "$work/none.json"
expect_error inspect-foreign "not a PNG image" -- inspect "$work/fake.pt"

# A prompt without --model draws with the bundled text-to-image demo.
if out=$("$cli" generate --prompt "a lake at night with a full moon" --seed 3 --out "$work/lake.png" --quiet 2>&1) &&
   "$cli" inspect "$work/lake.png" | grep -q "a lake at night with a full moon"; then
  pass prompt-uses-the-text-demo
else
  fail "prompt-uses-the-text-demo: $out"
fi

# Finishing a picture: the text demo ships its VQ encoder, so the lake's top rows
# can be kept and the rest drawn; the PNG records both. Wrong uses are refused.
if out=$("$cli" generate --prompt "a lake under a clear sky" --from "$work/lake.png" --keep-rows 5 --seed 4 \
           --policy linear:rho=1/4 --out "$work/finished.png" --quiet 2>&1) &&
   "$cli" inspect "$work/finished.png" | grep -q "Finished from: lake.png, Kept rows: 5"; then
  pass finish-a-picture
else
  fail "finish-a-picture: $out"
fi
expect_error keep-rows-without-picture "rows to keep need the picture they come from \(--from IMAGE\)" -- generate --prompt "a" --keep-rows 3 --out "$work/x.png"
expect_error picture-without-rows "finishing a picture needs the rows to keep \(--keep-rows K, at least 1\)" -- generate --prompt "a" --from "$work/lake.png" --out "$work/x.png"
expect_error missing-picture "picture $work/none.png does not exist" -- generate --prompt "a" --from "$work/none.png" --keep-rows 2 --out "$work/x.png"
expect_error keep-every-row "keeping 16 rows leaves nothing to draw: janus-pro-demo's images have 16 token rows, so keep 1 to 15" -- generate --prompt "a" --from "$work/lake.png" --keep-rows 16 --out "$work/x.png" --quiet
expect_error finish-on-var "option --from does not apply to .* models" -- generate --model "$demos/var-demo" --class 1 --from "$work/lake.png" --keep-rows 2 --out "$work/x.png"

if ((full_scope)); then  # generations and benches on the demo model
# generate: PNG with metadata, same seed -> same tokens, different seed -> different.
if "$cli" generate --class 3 --seed 11 --out "$work/a.png" --quiet >/dev/null &&
   "$cli" generate --class 3 --seed 11 --out "$work/b.png" --quiet >/dev/null &&
   "$cli" generate --class 3 --seed 12 --out "$work/c.png" --quiet >/dev/null; then
  pass generate-runs
  params=$("$cli" inspect "$work/a.png")
  if grep -q "Seed: 11" <<<"$params" && grep -q "CFG scale: 4" <<<"$params" && grep -q "Size: 64x64" <<<"$params"; then
    pass png-parameters-chunk
  else
    fail "png-parameters-chunk: $params"
  fi
  ta=$("$cli" inspect --json "$work/a.png" | tr -d ' \n' | grep -o '"tokens":\[[0-9,]*\]')
  tb=$("$cli" inspect --json "$work/b.png" | tr -d ' \n' | grep -o '"tokens":\[[0-9,]*\]')
  tc=$("$cli" inspect --json "$work/c.png" | tr -d ' \n' | grep -o '"tokens":\[[0-9,]*\]')
  if [[ -n "$ta" && "$ta" == "$tb" ]]; then pass same-seed-same-tokens; else fail same-seed-same-tokens; fi
  if [[ -n "$tc" && "$ta" != "$tc" ]]; then pass other-seed-other-tokens; else fail other-seed-other-tokens; fi
else
  fail generate-runs
fi

# --dtype: info counts the KV cache at the chosen dtype (half of f32 in bf16);
# bench records the dtype and its KV bytes are half of an f32 bench's.
if i32=$("$cli" info --json --dtype f32) && i16=$("$cli" info --json --dtype bf16) &&
   python3 - "$i32" "$i16" <<'PY'
import json, sys
a, b = json.loads(sys.argv[1]), json.loads(sys.argv[2])
assert a["run_dtype"] == "f32" and b["run_dtype"] == "bf16", (a["run_dtype"], b["run_dtype"])
assert a["kv_bytes_per_token"] == a["kv_bytes_per_token_f32"] > 0, a
assert 2 * b["kv_bytes_per_token"] == a["kv_bytes_per_token"], (a, b)
PY
then pass info-dtype; else fail info-dtype; fi
if "$cli" bench --policies full,streaming:rho=1/4 --classes 2 --threads 1 --no-warmup --quiet --device cpu --dtype f32 \
     --json "$work/bench-f32.json" >/dev/null &&
   "$cli" bench --policies full,streaming:rho=1/4 --classes 2 --threads 1 --no-warmup --quiet --device cpu --dtype bf16 \
     --json "$work/bench-bf16.json" >/dev/null &&
   python3 - "$work/bench-f32.json" "$work/bench-bf16.json" <<'PY'
import json, sys
a, b = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
assert [r["dtype"] for r in a] == ["f32", "f32"] and [r["dtype"] for r in b] == ["bf16", "bf16"], (a, b)
for ra, rb in zip(a, b):
    for key in ("kv_bytes_logical", "kv_bytes_allocated", "kv_bytes_peak", "kv_bytes_full"):
        assert ra[key] > 0 and 2 * rb[key] == ra[key], (ra["policy"], key, ra[key], rb[key])
PY
then pass bench-dtype-halves-kv; else fail bench-dtype-halves-kv; fi
# --cuda-graphs: a CPU bench takes both and ignores them (the same tokens,
# "n/a" in the JSON); the help texts name the switch.
if "$cli" bench --policies full,streaming:rho=1/4 --classes 2 --threads 1 --no-warmup --quiet --device cpu \
     --cuda-graphs on --json "$work/bench-graphs-on.json" >/dev/null &&
   "$cli" bench --policies full,streaming:rho=1/4 --classes 2 --threads 1 --no-warmup --quiet --device cpu \
     --cuda-graphs off --json "$work/bench-graphs-off.json" >/dev/null &&
   "$cli" generate --help | grep -q -- "--cuda-graphs on|off" && "$cli" bench --help | grep -q -- "--cuda-graphs on|off" &&
   "$cli" help | grep -q -- "--cuda-graphs on|off" &&
   python3 - "$work/bench-graphs-on.json" "$work/bench-graphs-off.json" <<'PY'
import json, sys
a, b = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
assert [r["cuda_graphs"] for r in a + b] == ["n/a"] * 4, (a, b)
assert [r["identical_images"] for r in a] == [r["identical_images"] for r in b], (a, b)
assert [r["kv_bytes_logical"] for r in a] == [r["kv_bytes_logical"] for r in b], (a, b)
PY
then pass cuda-graphs-switch-on-cpu; else fail cuda-graphs-switch-on-cpu; fi
if help=$("$cli" help) && grep -q -- "--dtype T" <<<"$help" &&
   "$cli" generate --help | grep -q -- "--dtype T" && "$cli" bench --help | grep -q -- "--dtype T"; then
  pass help-lists-dtype
else
  fail help-lists-dtype
fi

# Batches write one file per image.
if "$cli" generate --class 1,2 --batch 2 --seed 3 --out "$work/batch.png" --quiet >/dev/null &&
   [[ -f "$work/batch_0.png" && -f "$work/batch_3.png" && ! -f "$work/batch_4.png" ]]; then
  pass batch-files
else
  fail batch-files
fi
fi

# Family-specific options are refused by the families they do not apply to, and
# every policy names the models it serves.
expect_error convert-foreign-option "option --weights does not apply to --family llamagen" -- convert --family llamagen --checkpoint a.pt --tokenizer b.pt --out "$work/c" --weights ema
expect_error create-random-foreign-option "option --diffusion-steps does not apply to preset demo" -- create-random --out "$work/d" --diffusion-steps 50
expect_error create-random-unknown-preset "unknown preset 'nosuch' \(presets: demo, GPT-B" -- create-random --preset nosuch --out "$work/d"
if policies=$("$cli" policies) && grep -A3 '^amskv' <<<"$policies" | grep -q 'models: next-scale (VAR), next-scale text-to-image (Infinity)$' &&
   grep -A3 '^lazymar' <<<"$policies" | grep -q 'models: masked (MAR)$' &&
   grep -A3 '^streaming' <<<"$policies" | grep -q 'models: raster (LlamaGen), next-scale (VAR), text-to-image (Janus-Pro), text-to-image (Lumina-mGPT), next-scale text-to-image (Infinity)$' &&
   grep -A3 '^scalekv' <<<"$policies" | grep -q 'models: next-scale (VAR), next-scale text-to-image (Infinity)$' &&
   grep -A3 '^h2o' <<<"$policies" | grep -q 'models: raster (LlamaGen), next-scale (VAR), text-to-image (Janus-Pro), text-to-image (Lumina-mGPT), next-scale text-to-image (Infinity)$' &&
   grep -A3 '^snapkv' <<<"$policies" | grep -q 'models: raster (LlamaGen), next-scale (VAR), text-to-image (Janus-Pro), text-to-image (Lumina-mGPT), next-scale text-to-image (Infinity)$'; then
  pass policies-name-their-models
else
  fail policies-name-their-models
fi

# The bundled demo model is trained: info shows where it came from and its measured gates.
if demo_info=$("$cli" info) && grep -q "trained from scratch by kvstudio-train" <<<"$demo_info" &&
   grep -q "generated class accuracy" <<<"$demo_info"; then
  pass demo-info-quality
else
  fail demo-info-quality
fi
# info says what --device auto runs on and why (the CUDA part can be a package of
# its own): a GPU, or the CPU with the state of LibTorch's CUDA part.
if grep -Eq "^device auto: +(cuda:0 \(.+\); LibTorch's CUDA part (linked in|loaded from)|cpu; LibTorch's CUDA part (linked in; no GPU found|loaded from .+; no GPU found|not installed|failed to load))" <<<"$demo_info" &&
   [[ "$("$cli" info --json | grep -c '"device_auto": ')" == 1 ]]; then
  pass info-device-auto
else
  fail info-device-auto
fi

# info names the CPU, its instruction sets and the decode kernel's build; the
# environment switch turns it off or picks a build (one the CPU lacks falls back
# to the best it has).
avx2_here=0
grep -m1 '^flags' /proc/cpuinfo | grep -qw avx2 && grep -m1 '^flags' /proc/cpuinfo | grep -qw fma && avx2_here=1
if grep -Eq "^cpu: +.+; " <<<"$demo_info" &&
   grep -Eq "CPU decode kernel: (AVX-512|AVX2|not available on this CPU)" <<<"$demo_info" &&
   KVSTUDIO_CPU_DECODE_KERNEL=off "$cli" info | grep -q "CPU decode kernel: off" &&
   KVSTUDIO_CPU_DECODE_KERNEL=none "$cli" info | grep -Eq "CPU decode kernel: (none \(chosen\)|not available on this CPU)" &&
   { [[ $avx2_here == 0 ]] || KVSTUDIO_CPU_DECODE_KERNEL=avx2 "$cli" info | grep -q "CPU decode kernel: AVX2"; } &&
   [[ "$("$cli" info --json | grep -c '"decode_kernel": ')" == 1 ]]; then
  pass info-cpu-decode-kernel
else
  fail info-cpu-decode-kernel
fi

# A next-scale (VAR) model: info, generate scale by scale, reproducible ids, clear errors.
if "$cli" create-random --preset var-demo --out "$work/var" --seed 2 >/dev/null &&
   "$cli" info "$work/var" | grep -q "10 scales (1,2,3,4,5,6,8,10,13,16) = 680 tokens" &&
   progress=$("$cli" generate --model "$work/var" --class 4 --seed 5 --threads 1 --out "$work/va.png" 2>&1 >/dev/null) &&
   grep -q "scale 10/10 done" <<<"$progress" &&
   "$cli" generate --model "$work/var" --class 4 --seed 5 --threads 1 --out "$work/vb.png" --quiet >/dev/null; then
  pass var-generate
  va=$("$cli" inspect --json "$work/va.png" | tr -d ' \n' | grep -o '"tokens":\[[0-9,]*\]')
  vb=$("$cli" inspect --json "$work/vb.png" | tr -d ' \n' | grep -o '"tokens":\[[0-9,]*\]')
  if [[ -n "$va" && "$va" == "$vb" ]]; then pass var-same-seed-same-ids; else fail var-same-seed-same-ids; fi
else
  fail var-generate
fi
expect_error var-raster-policy "works on raster \(next-token\) models only" -- generate --model "$work/var" --class 1 --policy linear:rho=1/2 --out "$work/x.png" --quiet
expect_error var-bad-preset "unknown VAR size 'var-d17'" -- create-random --preset var-d17 --out "$work/v17"

# VAR policies: HeatKV's calibration is written into the bundle and used; the
# scale policies keep less KV than full in bench.
if out=$("$cli" calibrate --policy heatkv --model "$work/var" --images 2 --threads 1 2>&1) &&
   grep -q "wrote $work/var/heatkv_calibration.json" <<<"$out" &&
   grep -q '"format": "kvstudio-scale-attention-profile"' "$work/var/heatkv_calibration.json" &&
   "$cli" generate --model "$work/var" --class 2 --policy heatkv:budget=0.2 --threads 1 --out "$work/vh.png" --quiet; then
  pass var-calibrate-heatkv
else
  fail var-calibrate-heatkv
fi
# HACK's head classification likewise.
if out=$("$cli" calibrate --policy hack --model "$work/var" --images 2 --threads 1 2>&1) &&
   grep -q "wrote $work/var/hack_calibration.json" <<<"$out" &&
   grep -q '"format": "kvstudio-head-variance-profile"' "$work/var/hack_calibration.json" &&
   "$cli" generate --model "$work/var" --class 2 --policy hack:rho=1/4 --threads 1 --out "$work/vk.png" --quiet; then
  pass var-calibrate-hack
else
  fail var-calibrate-hack
fi
if ((full_scope)); then  # eight scale policies benched: generation work
if "$cli" bench --model "$work/var" \
     --policies full,streaming:rho=1/4,amskv,heatkv:budget=0.1,scalekv:rho=1/4,hack:rho=1/4,h2o:rho=1/4,snapkv:rho=1/4 \
     --threads 1 --no-warmup --quiet --json "$work/var-bench.json" >/dev/null &&
   python3 - "$work/var-bench.json" <<'PY'
import json, sys
records = {r["policy"]: r for r in json.load(open(sys.argv[1]))}
full = records["full"]
assert full["family"] == "var"
for name in ("streaming:rho=1/4", "amskv", "heatkv:budget=0.1", "scalekv:rho=1/4", "hack:rho=1/4", "h2o:rho=1/4",
             "snapkv:rho=1/4"):
    r = records[name]
    assert r["kv_bytes_logical"] < full["kv_bytes_logical"], name
    assert 0 <= r["token_agreement"] <= 1, name
    # PSNR is null when every image equals the full cache's (AMS-KV with every layer
    # at C_max on this random model: each scale attends before its layer rolls).
    assert (r["psnr"] > 0) if r["psnr"] is not None else r["identical_images"] == r["images"], name
PY
then
  pass var-bench-scale-policies
else
  fail var-bench-scale-policies
fi
fi
expect_error var-amskv-on-raster "policy amskv works on next-scale \(VAR\) models only" -- generate --class 1 --policy amskv --out "$work/x.png" --quiet
expect_error calibrate-not-calibrated "policy 'streaming' needs no calibration \(calibrated offline: heatkv, amskv, scalekv, hack\)" -- calibrate --policy streaming --model "$work/var"
# AMS-KV's threshold profiling: the file lands in the bundle with a theta that makes one
# of the six layers cache-demanding, and amskv runs with it.
if out=$("$cli" calibrate --policy amskv --model "$work/var" --images 3 --threads 1 2>&1) &&
   grep -q "wrote $work/var/amskv_calibration.json" <<<"$out" &&
   grep -q ": 1 of 6 layers cache-demanding (target 1 = 0.1667 of them)" <<<"$out" &&
   python3 - "$work/var/amskv_calibration.json" <<'PY' &&
import json, sys
c = json.load(open(sys.argv[1]))
assert c["format"] == "kvstudio-amskv-calibration", c["format"]
assert c["layers"] == 6 and c["classes"] == [0, 3, 6] and c["decision_scales"] == [7, 8, 9], c
assert sum(s < c["theta"] for s in c["layer_statistic"]) == 1
assert len(c["similarity"]) == 3 and all(len(image) == 6 for image in c["similarity"])
assert c["command"].startswith("kvstudio-cli calibrate --policy amskv") and c["created"].endswith("Z")
PY
   "$cli" generate --model "$work/var" --class 2 --policy amskv --threads 1 --out "$work/vams.png" --quiet; then
  pass var-calibrate-amskv
else
  fail var-calibrate-amskv
fi
if "$cli" calibrate --policy amskv --model "$work/var" --images 2 --threads 1 --demanding-fraction 1/2 \
     --out "$work/ams-half.json" | grep -q ": 3 of 6 layers cache-demanding (target 3 = 0.5 of them)"; then
  pass var-calibrate-amskv-fraction
else
  fail var-calibrate-amskv-fraction
fi
# ScaleKV's calibration: per layer and scale the ASI's two terms, in the bundle, read by
# the next scalekv run instead of measuring on first use.
if out=$("$cli" calibrate --policy scalekv --model "$work/var" --images 3 --threads 1 2>&1) &&
   grep -q "wrote $work/var/scalekv_calibration.json" <<<"$out" &&
   grep -q "ASI Z-score per layer (rows) and scale (columns), K' = 16" <<<"$out" &&
   python3 - "$work/var/scalekv_calibration.json" <<'PY' &&
import json, sys
c = json.load(open(sys.argv[1]))
assert c["format"] == "kvstudio-scalekv-calibration" and c["top_k"] == 16, c["format"]
assert c["layers"] == 6 and c["classes"] == [0, 3, 6] and c["samples"] == 3, c
assert len(c["current_ratio"]) == 6 * len(c["unit_tokens"]) == len(c["history_top_k"])
assert all(0 <= v <= 1 for v in c["current_ratio"] + c["history_top_k"])
PY
   out=$("$cli" generate --model "$work/var" --class 2 --policy scalekv:rho=1/4 --threads 1 --log-level info --out "$work/vsk.png" 2>&1) &&
   grep -q "loaded the ScaleKV calibration $work/var/scalekv_calibration.json" <<<"$out" &&
   ! grep -q "first use" <<<"$out"; then
  pass var-calibrate-scalekv
else
  fail var-calibrate-scalekv
fi
expect_error calibrate-fraction-not-amskv "option --demanding-fraction applies to --policy amskv" -- calibrate --policy heatkv --model "$work/var" --demanding-fraction 0.2
expect_error calibrate-fraction-range "option --demanding-fraction must be in \(0, 1\)" -- calibrate --policy amskv --model "$work/var" --demanding-fraction 1
if "$cli" policies | grep -q "amskv_calibration.json"; then pass policies-amskv-theta-source; else fail policies-amskv-theta-source; fi
expect_error calibrate-not-var "needs a next-scale \(VAR\) or next-scale text-to-image \(Infinity\) model; .* is a 'llamagen' model" -- calibrate --policy heatkv
expect_error var-heatkv-budget "the 3 sink scales alone hold 14 of 424 cached tokens" -- generate --model "$work/var" --class 1 --policy heatkv:budget=0.01 --out "$work/x.png" --quiet

# A masked (MAR) model: info, generate step by step, same seed same image, clear errors.
if "$cli" create-random --preset mar-demo --out "$work/mar" --seed 2 >/dev/null &&
   "$cli" info "$work/mar" | grep -q "16x16 continuous tokens of 4 channels" &&
   "$cli" generate --model "$work/mar" --class 4 --seed 5 --steps 6 --threads 1 --out "$work/ma.png" --quiet >/dev/null &&
   "$cli" generate --model "$work/mar" --class 4 --seed 5 --steps 6 --threads 1 --out "$work/mb.png" --quiet >/dev/null; then
  pass mar-generate
  ma=$("$cli" inspect --json "$work/ma.png" | tr -d ' \n' | grep -o '"tokens":\[[0-9,]*\]')
  mb=$("$cli" inspect --json "$work/mb.png" | tr -d ' \n' | grep -o '"tokens":\[[0-9,]*\]')
  # Same generation order and the same pixels (the metadata differs in its timings).
  if [[ -n "$ma" && "$ma" == "$mb" ]] && python3 -c '
import struct, sys, zlib
def pixels(path):
    b = open(path, "rb").read(); i = 8; data = b""
    while i < len(b):
        n = struct.unpack(">I", b[i:i + 4])[0]
        if b[i + 4:i + 8] == b"IDAT": data += b[i + 8:i + 8 + n]
        i += 12 + n
    return zlib.decompress(data)
assert pixels(sys.argv[1]) == pixels(sys.argv[2])
' "$work/ma.png" "$work/mb.png" 2>/dev/null; then
    pass mar-same-seed-same-image
  else
    fail mar-same-seed-same-image
  fi
else
  fail mar-generate
fi
expect_error mar-kv-policy "KV-cache policy for raster/scale models; masked \(MAR\) models take full, lazymar" -- generate --model "$work/mar" --class 1 --policy linear:rho=1/2 --out "$work/x.png" --quiet
expect_error mar-bad-schedule "unknown cfg schedule 'cosine'" -- generate --model "$work/mar" --class 1 --cfg-schedule cosine --out "$work/x.png" --quiet
expect_error steps-not-mar "option --steps does not apply to raster \(LlamaGen\) models" -- generate --class 1 --steps 4 --out "$work/x.png" --quiet
expect_error mar-bad-preset "unknown MAR size 'mar-XL'" -- create-random --preset mar-XL --out "$work/mxl"

if ((full_scope)); then  # bench on the demo model: generation work
# bench: full is the reference (agreement 1), compressed policies keep less KV.
if "$cli" bench --policies full,streaming:rho=1/4,linear:rho=1/4 --batch 2 --images 2 --seed 1 \
     --json "$work/bench.json" --chart "$work/bench.png" --quiet >/dev/null; then
  pass bench-runs
  if python3 -c '
import json, sys
records = json.load(open(sys.argv[1]))
required = ["policy", "params", "kv_bytes_logical", "kv_bytes_allocated", "kv_bytes_peak", "kv_bytes_full",
            "process_peak_bytes", "process_rss_delta_bytes", "tokens_per_s", "speedup_vs_full", "token_agreement",
            "psnr", "ssim", "images", "batch", "model", "device", "grid"]
assert len(records) == 3, len(records)
for r in records:
    missing = [k for k in required if k not in r]
    assert not missing, (r.get("policy"), missing)
full = records[0]
assert full["policy"] == "full" and full["token_agreement"] == 1, full
for r in records[1:]:
    assert r["kv_bytes_logical"] < full["kv_bytes_logical"], r
' "$work/bench.json" 2>&1; then
    pass bench-json
  else
    fail bench-json
  fi
  if python3 -c 'import sys; assert open(sys.argv[1], "rb").read(8) == b"\x89PNG\r\n\x1a\n"' "$work/bench.png" 2>/dev/null; then
    pass bench-chart
  else
    fail bench-chart
  fi
else
  fail bench-runs
fi
fi
expect_error bench-unknown-policy "unknown cache policy 'nosuch'" -- bench --policies full,nosuch:rho=1/4 --quiet
expect_error bench-impossible-budget "policy linear: .*impossible" -- bench --policies linear:rho=1/100 --quiet
expect_error bench-bad-random "--random: unknown architecture 'llamagen-Q@256'" -- bench --random llamagen-Q@256 --policies full --quiet
expect_error bench-bad-rounds "option --rounds must be between 1 and 100" -- bench --policies full --rounds 0 --quiet

# bench on a masked (MAR) model: feature caches, FLOPs counted per image, agreement by pixels,
# no evaluation classifier -> class_accuracy null; KV fields 0.
if "$cli" bench --model "$work/mar" --steps 6 --policies full,lazymar:start=1,interval=4 --threads 1 \
     --json "$work/mar_bench.json" --quiet >/dev/null && python3 -c '
import json, math, sys
full, lazy = json.load(open(sys.argv[1]))
assert full["policy"] == "full" and lazy["policy"] == "lazymar:interval=4,start=1", (full["policy"], lazy["policy"])
for r in (full, lazy):
    assert r["family"] == "mar" and r["steps"] == 6 and r["kv_bytes_full"] == 0, r
    assert r["class_accuracy"] is None and r["token_agreement"] is None, r
    assert r["flops"] > 0 and r["ssim"] is not None, r
assert full["flops_vs_full"] == 1 and full["identical_images"] == 1, full
assert 0 < lazy["flops"] < full["flops"] and abs(lazy["flops_vs_full"] - lazy["flops"] / full["flops"]) < 1e-9, lazy
' "$work/mar_bench.json" 2>&1; then
  pass bench-mar
else
  fail bench-mar
fi
expect_error bench-mar-kv-policy "masked \(MAR\) models take" -- bench --model "$work/mar" --policies full,linear:rho=1/4 --quiet
expect_error bench-steps-not-mar "applies to masked \(MAR\) models only" -- bench --policies full --steps 8 --quiet
expect_error bench-mar-bad-random "unknown architecture 'mar-XL'" -- bench --random mar-XL --policies full --quiet

# world: the procedural image world (class list, labelled grid, clear errors).
if [[ $("$cli" world --list | grep -c .) -ge 10 ]] && "$cli" world --list | grep -q "^ 1  mountains"; then
  pass world-list
else
  fail world-list
fi
if out=$("$cli" world --out "$work/world.png" --size 32 --per-class 2 --classes lake,0 --seed 3) &&
   grep -q "2 classes x 2 samples" <<<"$out" &&
   python3 -c 'import sys; assert open(sys.argv[1], "rb").read(8) == b"\x89PNG\r\n\x1a\n"' "$work/world.png"; then
  pass world-grid
else
  fail world-grid
fi
expect_error world-unknown-class "unknown scene class 'volcano'" -- world --out "$work/w.png" --classes volcano
expect_error world-bad-size "--size must be 16..1024 px, got 8" -- world --out "$work/w.png" --size 8
expect_error world-needs-out "missing required option --out" -- world
# world --captions: captions on stdout, and with --out the facts and captions beside the grid.
if out=$("$cli" world --out "$work/capt.png" --size 32 --per-class 2 --classes night_sky,tiling --seed 4 --captions) &&
   [[ $(grep -c "^night_sky [45]: \|^tiling [45]: " <<<"$out") -eq 4 ]] &&
   python3 - "$work/capt.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert d["split"] == "train", d["split"]
p = d["pictures"]
assert [(x["class"], x["seed"]) for x in p] == [("night_sky", 4), ("night_sky", 5), ("tiling", 4), ("tiling", 5)], p
assert p[0]["facts"]["time"] == "night" and p[0]["facts"]["light"]["kind"] == "moon", p[0]
assert "moon" in p[0]["captions"][0] and p[2]["facts"]["pattern"], p[2]
PY
then
  pass world-captions
else
  fail world-captions
fi
if a=$("$cli" world --captions --classes desert --per-class 3 --split held-out --captions-per-image 2) &&
   b=$("$cli" world --captions --classes desert --per-class 3 --split held-out --captions-per-image 2) &&
   t=$("$cli" world --captions --classes desert --per-class 3) &&
   [[ "$a" == "$b" && $(grep -c "^desert " <<<"$a") -eq 6 && $(grep -c "^desert " <<<"$t") -eq 3 && "$a" != "$t" ]] &&
   "$cli" world --help | grep -q -- "--split train"; then
  pass world-captions-split
else
  fail world-captions-split
fi
expect_error world-bad-split "unknown caption split 'test' \(expected train or held-out\)" -- world --captions --split test
expect_error world-split-needs-captions "--split applies to --captions" -- world --out "$work/w.png" --split train
# world --prompt-file: a bench prompt file, CLASS<TAB>CAPTION, in rounds over the classes, by default the
# held-out captions of held-out seeds; bench judges a text model's images on what its prompts ask for.
if out=$("$cli" world --prompt-file "$work/prompts.txt" --classes forest,desert --per-class 2) &&
   grep -q "4 prompts: 2 classes x 2 pictures x 1 captions, held-out split, seeds 1000000000..1000000001" <<<"$out" &&
   captions=$("$cli" world --captions --classes forest,desert --per-class 2 --split held-out --seed 1000000000) &&
   python3 - "$work/prompts.txt" "$captions" <<'PY'
import sys
lines = [l.rstrip("\n").split("\t") for l in open(sys.argv[1]) if not l.startswith("#")]
assert [l[0] for l in lines] == ["forest", "desert", "forest", "desert"], lines
printed = [l.split(": ", 1) for l in sys.argv[2].splitlines()]
assert sorted((c.split()[0], t) for c, t in printed) == sorted((l[0], l[1]) for l in lines), (printed, lines)
PY
then
  pass world-prompt-file
else
  fail world-prompt-file
fi
if "$cli" bench --random janus-pro-tiny --policies full --prompts "$work/prompts.txt" --images 4 --threads 1 --no-warmup \
     --quiet --device cpu --json "$work/bench-prompts.json" >"$work/bench-prompts.txt" &&
   grep -q "time %" "$work/bench-prompts.txt" && grep -q "prompted attributes judged: time 4," "$work/bench-prompts.txt" &&
   python3 - "$work/bench-prompts.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))[0]
assert r["class_judged"] == 0 and r["class_accuracy"] is None, r  # random weights: no classifier
# Classes are named (forest, desert): the sun's side is judged on both, its height
# on the forest only (not the desert sun), colours on neither (tilings only).
assert r["time_judged"] == 4 and r["light_side_judged"] == 4 and r["light_height_judged"] == 2, r
assert r["colour_judged"] == 0 and r["colour_accuracy"] is None, r
assert r["clouds_judged"] == 0 and r["clouds_accuracy"] is None, r  # forest and desert skies are not judged for clouds
assert r["attribute_judged"] == (r["time_judged"] + r["light_side_judged"] + r["light_height_judged"] + r["colour_judged"]
                                 + r["clouds_judged"]), r
assert 0 <= r["attribute_accuracy"] <= 1, r
PY
then
  pass bench-prompt-file
else
  fail "bench-prompt-file: $(cat "$work/bench-prompts.txt")"
fi
printf 'lake\ta calm lake\nvolcano\tlava at night\n' >"$work/bad-prompts.txt"
expect_error bench-prompt-unknown-class "bad-prompts.txt line 2: unknown class 'volcano' before the tab" -- bench --random janus-pro-tiny --policies full --prompts "$work/bad-prompts.txt"
expect_error world-prompt-file-alone "--prompt-file cannot be combined with --out" -- world --prompt-file "$work/p.txt" --out "$work/w.png"
if "$cli" bench --help | grep -q "CLASS<TAB>PROMPT" && "$cli" world --help | grep -q -- "--prompt-file FILE"; then
  pass prompt-file-help
else
  fail prompt-file-help
fi

# Infinity: a tiny random bundle end to end (the prompt, a non-square official
# size, HeatKV calibrating on its prompts at first use), and its refusals.
if "$cli" create-random --preset infinity-tiny --out "$work/infinity" >/dev/null &&
   "$cli" generate --model "$work/infinity" --prompt "a red fox in the snow" --size 80x60 --policy heatkv:budget=0.2 \
     --device cpu --threads 1 --out "$work/infinity.png" >"$work/infinity-gen.txt" 2>&1 &&
   python3 - "$work/infinity.png" <<'PY'
import struct, sys
data = open(sys.argv[1], "rb").read()
width, height = struct.unpack(">II", data[16:24])
assert (width, height) == (80, 60), (width, height)
PY
then
  pass infinity-generate
else
  fail "infinity-generate: $(cat "$work/infinity-gen.txt" 2>/dev/null)"
fi
# Infinity's calibrations: one file per policy and image size in the bundle, read by the runs at that size.
if out=$("$cli" calibrate --policy heatkv --model "$work/infinity" --image-size 80x60 --images 2 --threads 1 2>&1) &&
   grep -q "wrote $work/infinity/heatkv_calibration.80x60.json" <<<"$out" &&
   python3 - "$work/infinity/heatkv_calibration.80x60.json" <<'PY' &&
import json, sys
c = json.load(open(sys.argv[1]))
assert c["format"] == "kvstudio-scale-attention-profile", c["format"]
assert c["classes"] == [0, 1] and c["cfg"] == 3 and c["seed"] == 0 and c["samples"] == 2, c
PY
   out=$("$cli" generate --model "$work/infinity" --prompt "a red fox in the snow" --size 80x60 \
     --policy heatkv:budget=0.2 --threads 1 --log-level info --out "$work/inf-heat.png" 2>&1) &&
   grep -q "loaded the scale-attention calibration $work/infinity/heatkv_calibration.80x60.json" <<<"$out" &&
   ! grep -q "first use" <<<"$out"; then
  pass infinity-calibrate-heatkv
else
  fail "infinity-calibrate-heatkv: $out"
fi
# AMS-KV's theta profiling on Infinity, used by amskv at that size only.
if out=$("$cli" calibrate --policy amskv --model "$work/infinity" --images 2 --threads 1 2>&1) &&
   grep -q "layers cache-demanding (target 1 = 0.1667 of them)" <<<"$out" &&
   python3 - "$work/infinity" <<'PY' &&
import glob, json, sys
files = glob.glob(sys.argv[1] + "/amskv_calibration.*.json")
assert len(files) == 1, files
c = json.load(open(files[0]))
assert c["format"] == "kvstudio-amskv-calibration" and c["classes"] == [0, 1], c
assert sum(s < c["theta"] for s in c["layer_statistic"]) == c["demanding_layers"] >= 1
PY
   out=$("$cli" generate --model "$work/infinity" --prompt "a red fox in the snow" --policy amskv --threads 1 \
     --log-level info --out "$work/inf-ams.png" 2>&1) &&
   grep -q "loaded the AMS-KV calibration $work/infinity/amskv_calibration" <<<"$out"; then
  pass infinity-calibrate-amskv
else
  fail "infinity-calibrate-amskv: $out"
fi
expect_error infinity-calibrate-classes "Infinity calibrates on prompts, not classes" -- calibrate --policy hack --model "$work/infinity" --classes 1,2
expect_error infinity-calibrate-prompts "Infinity calibrates on 1 to 30 prompts, asked for 31" -- calibrate --policy hack --model "$work/infinity" --images 31
expect_error infinity-size "image size 100x100 is not one Infinity writes" -- generate --model "$work/infinity" --prompt "a fox" --size 100x100 --out "$work/x.png"
expect_error infinity-convert-needs-t5 "--t5" -- convert --family infinity --checkpoint "$work/none.pth" --vae "$work/none.pth" --out "$work/conv"

# The gallery: generate records each PNG it writes (its absolute path, seed, model,
# policy, figures); --no-gallery and KVSTUDIO_GALLERY=off record nothing; list,
# remove, export and path; a gallery that cannot be opened costs one warning
# line, never the image or the exit code.
g="$work/gallery-checks"
gcli() { KVSTUDIO_GALLERY_DIR="$g" "$cli" "$@"; }
if [[ "$(gcli gallery path)" == "$g/gallery.sqlite" ]] && gcli gallery --help | grep -q -- "--delete-file" &&
   "$cli" --help | grep -q "^  gallery " && "$cli" generate --help | grep -q -- "--no-gallery"; then
  pass gallery-path-and-help
else
  fail gallery-path-and-help
fi
KVSTUDIO_GALLERY_DIR="$g" expect_error gallery-bad-id "gallery id 'abc' is not an image id" -- gallery remove abc
KVSTUDIO_GALLERY_DIR="$g" expect_error gallery-bad-ids "gallery id '' is not an image id" -- gallery export 1,,2 --to "$work/x"
KVSTUDIO_GALLERY_DIR="$g" expect_error gallery-unknown-id "no image 99 in the gallery $g/gallery.sqlite" -- gallery remove 99
KVSTUDIO_GALLERY_DIR="$g" expect_error gallery-export-needs-to "missing required option --to" -- gallery export 1
KVSTUDIO_GALLERY_DIR="$g" expect_error gallery-unknown-command "unknown gallery command 'show'" -- gallery show
KVSTUDIO_GALLERY_DIR="$g" expect_error gallery-bad-limit "option --limit must be >= 0" -- gallery list --limit -3
mkdir -p "$work/not-a-gallery"
head -c 8192 /dev/urandom >"$work/not-a-gallery/gallery.sqlite"
KVSTUDIO_GALLERY_DIR="$work/not-a-gallery" expect_error gallery-corrupt "gallery $work/not-a-gallery/gallery.sqlite is not a SQLite database" -- gallery list
if ((full_scope)); then  # generations on the demo model
if (cd "$work" && gcli generate --class 3 --seed 21 --out g1.png --quiet >/dev/null) &&
   gcli generate --class 5 --seed 22 --policy linear:rho=1/4 --out "$work/g2.png" --quiet >/dev/null &&
   gcli generate --class 5 --seed 23 --no-gallery --out "$work/g3.png" --quiet >/dev/null &&
   KVSTUDIO_GALLERY=off gcli generate --class 5 --seed 24 --out "$work/g4.png" --quiet >/dev/null &&
   gcli gallery list --json >"$work/gallery.json" &&
   python3 - "$work/gallery.json" "$work" <<'PY'
import json, sys
entries, work = json.load(open(sys.argv[1])), sys.argv[2]
assert [e["seed"] for e in entries] == [22, 21], [e["seed"] for e in entries]  # newest first
new, old = entries
assert old["png_path"] == work + "/g1.png", old["png_path"]  # --out was relative: stored absolute
assert new["png_path"] == work + "/g2.png", new["png_path"]
assert new["policy"] == "linear:rho=1/4" and old["policy"] == "full", (new["policy"], old["policy"])
assert new["model_name"] == "llamagen-demo" and new["family"] == "llamagen" and new["source"] == "cli", new
assert new["class_id"] == 5 and old["class_id"] == 3 and new["width"] == 64 and new["height"] == 64, new
assert new["request"]["seed"] == 22 and new["request"]["policy"] == "linear:rho=1/4", new["request"]
assert new["kv_bytes_full"] > new["kv_bytes_logical_final"] > 0 and new["tokens_per_second"] > 0, new
assert new["created"].endswith("Z") and new["id"] > old["id"], (new["created"], new["id"], old["id"])
PY
then
  pass gallery-records-generate
else
  fail gallery-records-generate
fi
if list=$(gcli gallery list) && [[ $(grep -c . <<<"$list") -eq 2 ]] && grep -q "$work/g2.png" <<<"$list" &&
   [[ $(gcli gallery list --search LINEAR | grep -c .) -eq 1 ]] &&
   gcli gallery list --policy full | grep -q "$work/g1.png" && ! gcli gallery list --policy full | grep -q "g2.png" &&
   [[ $(gcli gallery list --model llamagen-demo --limit 1 2>/dev/null | grep -c .) -eq 1 ]] &&
   [[ -z "$(gcli gallery list --model var-demo)" ]]; then
  pass gallery-list-search
else
  fail "gallery-list-search: $list"
fi
ids=$(python3 -c 'import json, sys; print(",".join(str(e["id"]) for e in json.load(open(sys.argv[1]))))' "$work/gallery.json")
new_id=${ids%%,*} old_id=${ids##*,}
if out=$(gcli gallery export "$ids" --to "$work/exported") && [[ $(grep -c . <<<"$out") -eq 2 ]] &&
   cmp -s "$work/g1.png" "$work/exported/g1.png" && cmp -s "$work/g2.png" "$work/exported/g2.png" &&
   gcli gallery export "$old_id" --to "$work/exported" | grep -q "$work/exported/g1_2.png"; then
  pass gallery-export
else
  fail "gallery-export: $out"
fi
if gcli gallery remove "$new_id" --delete-file >/dev/null && [[ ! -e "$work/g2.png" ]] &&
   gcli gallery remove "$old_id" >/dev/null && [[ -e "$work/g1.png" ]] &&
   [[ "$(gcli gallery list --json | tr -d ' \n')" == "[]" ]]; then
  pass gallery-remove
else
  fail gallery-remove
fi
KVSTUDIO_GALLERY_DIR="$g" expect_error gallery-removed-id "no image $new_id in the gallery" -- gallery remove "$new_id"
if gcli generate --class 2 --seed 25 --out "$work/g5.png" --quiet >/dev/null && rm "$work/g5.png"; then
  g5=$(gcli gallery list --json | python3 -c 'import json, sys; print(json.load(sys.stdin)[0]["id"])')
  KVSTUDIO_GALLERY_DIR="$g" expect_error gallery-export-missing-file "the image files are gone: $work/g5.png \(id $g5\)" -- gallery export "$g5" --to "$work/exported2"
else
  fail gallery-export-missing-file
fi
# A gallery that cannot be created (its folder would be under a file) or is not
# a database: the image is written all the same, with one warning line.
printf 'x' >"$work/a-file"
for broken in "$work/a-file/gallery" "$work/not-a-gallery"; do
  rm -f "$work/g6.png"
  err=$(KVSTUDIO_GALLERY_DIR="$broken" "$cli" generate --class 1 --seed 26 --out "$work/g6.png" --quiet 2>&1 >/dev/null)
  rc=$?
  if [[ $rc -eq 0 && -s "$work/g6.png" && $(grep -c . <<<"$err") -eq 1 ]] &&
     grep -q "^kvstudio-cli: warning: not kept in the gallery" <<<"$err" && grep -q "$broken" <<<"$err"; then
    pass "gallery-broken-keeps-image ($(basename "$broken"))"
  else
    fail "gallery-broken-keeps-image ($broken): exit $rc: $err"
  fi
done
fi

echo "cli: $passes passed, $failures failed"
[[ $failures -eq 0 ]]
