#!/usr/bin/env bash
# bench --out / --shard / bench merge on the trained demo model (it ships its
# evaluation classifier, so class accuracy and demo-FID are judged): three
# shards of unequal size (2 images, 1 image, none) merge into the records of
# the unsharded bench (counts, accuracies, agreement, PSNR, SSIM and KV bytes
# exactly, demo-FID to 1e-9); a stopped shard resumes after its last finished
# run; a folder refuses a bench with other settings, naming the setting; merge
# refuses missing and doubled runs; --save-images writes PNGs with metadata; a
# sweep's table, chart and grid, in one process and merged from shards.
set -u
cli="$1"
work="$2"
rm -rf "$work" && mkdir -p "$work"
source "$(dirname "${BASH_SOURCE[0]}")/cli_test_lib.sh"
# 3 images in runs of 2: run 0 (images 0, 1) and run 1 (image 2).
common=(--policies full,streaming:rho=1/4 --images 3 --batch 2 --classes 0,5,7 --threads 1 --no-warmup --quiet
        --device cpu --dtype f32)

"$cli" bench "${common[@]}" --json "$work/whole.json" >"$work/whole.txt" || fail whole-bench

# Shard 2 of 3 owns no run (run r belongs to shard r mod 3): it must still be harmless.
for i in 2 1 0; do
  "$cli" bench "${common[@]}" --out "$work/shards" --shard "$i/3" --save-images >"$work/shard$i.txt" || fail "shard-$i"
done
if grep -q "shard 2/3: 0 of its 0 runs done in .* (0 made now)" "$work/shard2.txt" &&
   grep -q "shard 0/3: 1 of its 1 runs done in .* (1 made now)" "$work/shard0.txt"; then
  pass shard-summaries
else
  fail shard-summaries; cat "$work"/shard*.txt
fi
"$cli" bench merge "$work/shards" >"$work/merged.txt" || fail merge
compare_records() {  # compare_records A.json B.json: the records agree but for the timing and process columns
  python3 - "$1" "$2" <<'PY'
import json, math, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
timing = {"generation_ms", "tokens_per_s", "speedup_vs_full", "process_peak_bytes", "process_peak_is_own",
          "process_rss_delta_bytes"}
assert [r["policy"] for r in a] == [r["policy"] for r in b] == ["full", "streaming:rho=1/4"], (a, b)
for ra, rb in zip(a, b):
    assert ra.keys() == rb.keys(), (ra.keys(), rb.keys())
    for k in ra:
        if k in timing:
            continue
        if k == "demo_fid":
            assert ra[k] is not None and math.isclose(ra[k], rb[k], rel_tol=0, abs_tol=1e-9), (k, ra[k], rb[k])
        else:
            assert ra[k] == rb[k], (ra["policy"], k, ra[k], rb[k])
    assert ra["images"] == 3 and ra["class_judged"] == 3 and ra["quality_reference_images"] > 0, ra
    assert ra["tokens_per_s"] > 0 and rb["tokens_per_s"] > 0, (ra, rb)
assert a[1]["token_agreement"] < 1 and a[1]["kv_bytes_logical"] < a[0]["kv_bytes_logical"], a
PY
}
if compare_records "$work/whole.json" "$work/shards/bench.json"; then pass merged-equals-unsharded
else fail merged-equals-unsharded; cat "$work/whole.txt" "$work/merged.txt"; fi
# The table is the unsharded one: the same rows but for the speed columns.
strip_speed() { awk '{ if ($1 == "full" || $1 ~ /^streaming/) { $6 = $7 = "-" } else { $1 = $1 } print }' "$1"; }
if diff <(strip_speed "$work/whole.txt") <(strip_speed "$work/merged.txt") >/dev/null; then pass merged-table
else fail merged-table; diff "$work/whole.txt" "$work/merged.txt"; fi

# One line per image and policy, with the PNGs they name (with KV Studio's metadata).
if python3 - "$work/shards" <<'PY'
import glob, json, os, sys
d = sys.argv[1]
lines = [json.loads(l) for f in sorted(glob.glob(d + "/shard-*.jsonl")) for l in open(f)]
images = [l for l in lines if "image" in l]
assert sorted((l["policy"], l["image"]) for l in images) == sorted(
    (p, i) for p in ("full", "streaming:rho=1/4") for i in range(3)), images
assert sorted(l["run_done"] for l in lines if "run_done" in l) == [0, 1], lines
for l in images:
    assert l["seed"] == l["run"] and l["class"] == [0, 5, 7][l["image"]], l
    assert l["predicted_class"] is not None and l["kv_bytes_full"] > 0 and l["run_tokens_per_s"] > 0, l
    png = os.path.join(d, l["png"])
    assert os.path.exists(png) and b"kvstudio" in open(png, "rb").read(), png
    if l["policy"] == "full":
        assert l["identical"] and l["psnr"] is None and l["token_agreement"] == 1.0, l
PY
then pass image-lines; else fail image-lines; fi

# A stopped bench resumes. Shard 0/3 made run 0 only, which is what an
# unsharded bench into a folder has on disk when it is stopped while making run
# 1 (its statistics name run 0; its lines may hold part of run 1, the last one
# cut in the middle of writing): lay that out and run the bench again.
mkdir -p "$work/resume"
cp "$work/shards/settings.json" "$work/resume/"
cp "$work/shards/shard-0-of-3.json" "$work/resume/shard-0-of-1.json"
python3 - "$work/shards/shard-0-of-3.jsonl" "$work/resume/shard-0-of-1.jsonl" <<'PY'
import json, sys
lines = open(sys.argv[1]).read().splitlines()
unfinished = json.loads(lines[0])
unfinished.update(run=1, image=2)  # a line of run 1, which has no run_done line
with open(sys.argv[2], "w") as out:
    out.write("\n".join(lines) + "\n" + json.dumps(unfinished) + "\n" + json.dumps(unfinished)[:40])
PY
"$cli" bench "${common[@]}" --out "$work/resume" --save-images --json "$work/resumed.json" >"$work/resume.txt" 2>&1 ||
  fail resume-run
if compare_records "$work/whole.json" "$work/resumed.json" &&
   [[ $(grep -c '"run_done"' "$work/resume/shard-0-of-1.jsonl") -eq 2 ]] &&
   [[ $(grep -c '"image"' "$work/resume/shard-0-of-1.jsonl") -eq 6 ]]; then
  pass resumed-equals-unsharded
else
  fail resumed-equals-unsharded; cat "$work/resume.txt" "$work/resume/shard-0-of-1.jsonl"
fi
# A finished shard run again makes nothing.
"$cli" bench "${common[@]}" --out "$work/shards" --shard 0/3 --save-images >"$work/again.txt" 2>&1
if grep -q "shard 0/3: 1 of its 1 runs done in .* (0 made now)" "$work/again.txt" &&
   [[ $(grep -c '"run_done"' "$work/shards/shard-0-of-3.jsonl") -eq 1 ]]; then
  pass finished-shard-skips
else
  fail finished-shard-skips; cat "$work/again.txt"
fi

# Other settings in the same folder are refused, naming the setting.
expect_error out-other-batch 'holds a bench with other settings: batch is 2 there and 1 here' \
  -- bench "${common[@]}" --batch 1 --out "$work/shards" --shard 0/3 --save-images
expect_error out-other-policies 'holds a bench with other settings: policies is .* there and .* here' \
  -- bench "${common[@]}" --policies full,linear:rho=1/4 --out "$work/shards" --shard 0/3 --save-images
# Merge: a run missing, a run twice, folders of other benches.
mkdir -p "$work/partial" && cp "$work/shards/settings.json" "$work/shards"/shard-0-of-3.* "$work/partial/"
expect_error merge-missing-run 'bench merge: 1 of 2 runs are not done yet \(1\)' -- bench merge "$work/partial"
expect_error merge-doubled-run 'bench merge: run 0 is in both .* and .*; give each run once' \
  -- bench merge "$work/shards" "$work/partial"
"$cli" bench "${common[@]}" --seed 7 --out "$work/other" --shard 1/3 >/dev/null 2>&1
expect_error merge-other-settings 'bench merge: the folders hold benches with other settings: save_images is true in .* and false in .*' \
  -- bench merge "$work/shards" "$work/other"
expect_error shard-without-out 'option --shard needs --out DIR' -- bench "${common[@]}" --shard 0/2
expect_error shard-range 'option --shard expects I/N with 0 <= I < N, got .2/2.' -- bench "${common[@]}" --out "$work/x" --shard 2/2
expect_error shard-json 'options --json, --chart and --grid apply to the whole bench' \
  -- bench "${common[@]}" --out "$work/x" --shard 0/2 --json "$work/x.json"
expect_error out-max-memory 'option --max-memory runs in one process' -- bench "${common[@]}" --out "$work/x" --max-memory 1

# A sweep: streaming at two budgets beside full, in one process and as two
# shards of one image each; the merged grid is the same picture.
sweep=(--policies full,streaming --sweep rho=1/2,1/4 --images 2 --batch 1 --classes 3 --threads 1 --no-warmup --quiet
       --device cpu --dtype f32)
"$cli" bench "${sweep[@]}" --json "$work/sweep.json" --chart "$work/sweep-chart.png" --grid "$work/sweep-grid.png" \
  >"$work/sweep.txt" || fail sweep-run
for i in 0 1; do
  "$cli" bench "${sweep[@]}" --out "$work/sweep-shards" --shard "$i/2" --save-images >/dev/null || fail "sweep-shard-$i"
done
"$cli" bench merge "$work/sweep-shards" --chart "$work/sweep-merged-chart.png" --grid "$work/sweep-merged-grid.png" \
  >/dev/null || fail sweep-merge
if python3 - "$work/sweep.json" "$work/sweep-grid.png" "$work/sweep-chart.png" <<'PY'
import json, struct, sys
records = json.load(open(sys.argv[1]))
assert [r["policy"] for r in records] == ["full", "streaming:rho=1/2", "streaming:rho=1/4"], records
full, half, quarter = (r["kv_bytes_logical"] for r in records)
assert full > half > quarter, (full, half, quarter)
def size(path):
    data = open(path, "rb").read(24)
    assert data[:8] == b"\x89PNG\r\n\x1a\n", path
    return struct.unpack(">II", data[16:24])
w, h = size(sys.argv[2])
assert h == 40 + 1 * (128 + 8) + 8 and w > 3 * (128 + 8), (w, h)  # one policy row; full + two budgets
w, h = size(sys.argv[3])
assert w == 960 and h > 320, (w, h)
PY
then pass sweep-records-and-pictures; else fail sweep-records-and-pictures; cat "$work/sweep.txt"; fi
if cmp -s "$work/sweep-grid.png" "$work/sweep-merged-grid.png" && cmp -s "$work/sweep-chart.png" "$work/sweep-merged-chart.png"; then
  pass sweep-merged-pictures
else
  fail sweep-merged-pictures
fi
expect_error sweep-key-twice 'option --sweep: policy streaming:rho=1/8 sets rho already' \
  -- bench --policies full,streaming:rho=1/8 --sweep rho=1/2,1/4
expect_error sweep-malformed 'option --sweep expects KEY=V1,V2' -- bench --policies full,streaming --sweep rho
expect_error grid-without-sweep 'option --grid applies with --sweep' -- bench --policies full,streaming:rho=1/4 --grid "$work/g.png"

echo "$passes passed, $failures failed"
[[ $failures -eq 0 ]]
