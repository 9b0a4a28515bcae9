#!/usr/bin/env bash
# batch_per_frame.sh OCTASIM MODEL DIR
# `octasim net MODEL --config nv_full --batch 4` against the same 4 images with one image per run
# (--limit 4): the outputs are the same bytes; the batch's cycles are printed per batch and per
# frame (= batch / 4), fps is the clock over the cycles per frame, the report's network cycles
# are the batch's; and the first Gemm's cycles per frame are fewer than one image's at batch 1.
set -u
octasim=$1 model=$2 dir=$3
fail() { echo "FAIL: $*"; for f in "$dir"/*.txt; do echo "--- $f"; cat "$f"; done; exit 1; }
rm -rf "$dir" && mkdir -p "$dir"
"$octasim" net "$model" --config nv_full --batch 4 --no-progress --output "$dir/b4.npy" \
  --report "$dir/b4.json" >"$dir/b4.txt" 2>&1 || fail "--batch 4 exited $?"
"$octasim" net "$model" --config nv_full --limit 4 --no-progress --output "$dir/b1.npy" \
  >"$dir/b1.txt" 2>&1 || fail "--limit 4 exited $?"
cmp -s "$dir/b4.npy" "$dir/b1.npy" || fail "the outputs of --batch 4 differ from one image per run"
line=$(grep -E '^cycles: [0-9]+ per batch of 4 images, [0-9]+ per frame' "$dir/b4.txt") ||
  fail "no cycles line"
batch=$(echo "$line" | sed -E 's/^cycles: ([0-9]+) per batch.*/\1/')
frame=$(echo "$line" | sed -E 's/.* images, ([0-9]+) per frame.*/\1/')
fps=$(sed -nE 's/^fps: ([0-9.]+) \(at ([0-9]+) MHz\)$/\1/p' "$dir/b4.txt")
mhz=$(sed -nE 's/^fps: ([0-9.]+) \(at ([0-9]+) MHz\)$/\2/p' "$dir/b4.txt")
[ -n "$fps" ] || fail "no fps line"
/usr/bin/python3 - "$batch" "$frame" "$fps" "$mhz" "$dir/b4.json" <<'PY' || fail "per-frame arithmetic"
import json, sys
batch, frame, fps, mhz = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4])
report = json.load(open(sys.argv[5]))["network"]
assert report["cycles"] == batch and report["images"] == 4, report
assert abs(frame - batch / 4) <= 0.5, (frame, batch)
assert abs(fps - mhz * 1e6 / (batch / 4)) <= 0.05 + 1e-4 * fps, (fps, batch)
PY
# The first Gemm's row: cycles per frame (batch 4, 4th column) against one image's (3rd column).
fc4=$(grep -E "Gemm '/fc1/Gemm'" "$dir/b4.txt" | awk '{print $4}')
fc1=$(grep -E "Gemm '/fc1/Gemm'" "$dir/b1.txt" | awk '{print $3}')
[ -n "$fc4" ] && [ -n "$fc1" ] || fail "no fc1 rows"
[ "$fc4" -lt "$fc1" ] || fail "fc1: $fc4 cycles per frame at batch 4, $fc1 at batch 1"
echo "batch 4: $batch cycles, $frame per frame, $fps fps; fc1 per frame $fc4 (batch 1: $fc1)"
