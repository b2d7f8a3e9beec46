#!/usr/bin/env bash
# bench --max-memory on the demo model, on the CPU (the engine's accounting:
# weights at the run dtype + the KV cache's peak): caps derived from a first
# search make the answer definite (full fits batch 2 and not 3; a compressed
# policy fits more), a cap below batch 1 is refused with one clear line, and the
# option errors name the option.
set -u
cli="$1"
work="$2"
rm -rf "$work" && mkdir -p "$work"
source "$(dirname "${BASH_SOURCE[0]}")/cli_test_lib.sh"
common=(--policies full,streaming:rho=1/4 --classes 2 --threads 1 --no-warmup --quiet --device cpu --dtype f32)

expect_error max-memory-negative "option --max-memory must be a positive number of GiB" -- bench --policies full --max-memory -1
expect_error max-memory-text "option --max-memory expects a number, got 'lots'" -- bench --policies full --max-memory lots
expect_error max-batch-alone "option --max-batch applies with --max-memory" -- bench --policies full --max-batch 4
expect_error max-batch-range "option --max-batch must be between 1 and 256" -- bench --policies full --max-memory 1 --max-batch 300
expect_error max-memory-below-weights "the cap of .* MiB is smaller than the model's weights alone \(.* MiB at f32\), so no batch fits" \
  -- bench "${common[@]}" --max-memory 0.0001
if "$cli" bench --help | grep -q -- '--max-memory GiB' && "$cli" bench --help | grep -q -- '--max-batch N'; then
  pass bench-help-max-memory
else
  fail bench-help-max-memory
fi

# A search with room to spare, up to batch 2: both batches fit, at the limit.
if "$cli" bench "${common[@]}" --max-memory 64 --max-batch 2 --json "$work/roomy.json" >"$work/roomy.txt" &&
   python3 - "$work/roomy.json" <<'PY'
import json, sys
records = json.load(open(sys.argv[1]))
assert [r["policy"] for r in records] == ["full", "streaming:rho=1/4"], records
for r in records:
    m = r["max_memory"]
    assert m["measure"] == "weights + KV peak" and m["cap_bytes"] == 64 << 30, m
    assert m["max_batch"] == 2 and m["at_limit"] and m["batch_limit"] == 2, m
    assert [p["batch"] for p in m["probes"]] == [1, 2] and all(p["fits"] for p in m["probes"]), m
    assert m["weights_bytes"] > 0 and m["peak_bytes"] == m["weights_bytes"] + m["kv_bytes_peak"], m
    assert m["tokens_per_s"] > 0 and m["tokens_per_s"] == m["probes"][1]["tokens_per_s"], m
    assert r["batch"] == 1 and r["tokens_per_s"] > 0, r  # the same-batch comparison is still there
assert records[0]["max_memory"]["ratio_vs_full"] == 1.0, records[0]
PY
then pass max-memory-roomy; else fail max-memory-roomy; cat "$work/roomy.txt"; fi
if grep -q "largest batch under 64.00 GiB (weights + KV peak; search up to batch 2)" "$work/roomy.txt" &&
   grep -Eq "^full +2\+ " "$work/roomy.txt"; then
  pass max-memory-table
else
  fail max-memory-table; cat "$work/roomy.txt"
fi

# Caps from the measured peaks: between the weights and batch 1 (refused), and
# just above full's batch 2 (full: 2, the compressed cache: more).
caps=$(python3 - "$work/roomy.json" <<'PY'
import json, sys
full, streaming = (r["max_memory"] for r in json.load(open(sys.argv[1])))
weights = full["weights_bytes"]
one = {p["batch"]: p["peak_bytes"] for p in full["probes"]}
kv1 = min(one[1], {p["batch"]: p["peak_bytes"] for p in streaming["probes"]}[1]) - weights
below = weights + kv1 // 2
two = one[2] + (one[2] - one[1]) // 4
print("%.12f %.12f" % (below / 2**30, two / 2**30))
PY
)
read -r below two <<<"$caps"
expect_error max-memory-below-batch-1 "the cap of .* MiB is smaller than batch 1 needs under every policy \(weights \+ KV peak at batch 1: full .* MiB, streaming:rho=1/4 .* MiB\)" \
  -- bench "${common[@]}" --max-memory "$below"
if "$cli" bench "${common[@]}" --max-memory "$two" --max-batch 8 --json "$work/tight.json" >"$work/tight.txt" &&
   python3 - "$work/tight.json" <<'PY'
import json, math, sys
full, streaming = (r["max_memory"] for r in json.load(open(sys.argv[1])))
assert full["max_batch"] == 2 and not full["at_limit"], full
assert [(p["batch"], p["fits"]) for p in full["probes"]] == [(1, True), (2, True), (4, False), (3, False)], full
assert all(p["peak_bytes"] > full["cap_bytes"] for p in full["probes"] if not p["fits"]), full
assert full["ratio_vs_full"] == 1.0, full
assert streaming["max_batch"] > 2, streaming
assert streaming["peak_bytes"] <= streaming["cap_bytes"], streaming
ratio = streaming["tokens_per_s"] / full["tokens_per_s"]
assert math.isclose(streaming["ratio_vs_full"], ratio, rel_tol=1e-9), (streaming, ratio)
PY
then pass max-memory-definite; else fail max-memory-definite; cat "$work/tight.txt"; fi

echo "$passes passed, $failures failed"
[[ $failures -eq 0 ]]
