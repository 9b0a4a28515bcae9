#!/usr/bin/env bash
# table_round_trip.sh OCTASIM MODEL DIR [NET_ARGS...]
# `octasim net MODEL NET_ARGS --save-calibration DIR/table.json --output DIR/a.npy`, then the
# same run with `--calibration-table DIR/table.json` instead of calibrating: the table holds
# every clip the first run used, so the device's outputs must be the same bytes. The second run
# is given one calibration image (--calib-images 1), and a control run calibrating on that one
# image must give other outputs: so equal outputs show that the table's clips were used.
set -u
octasim=$1 model=$2 dir=$3
shift 3
fail() { echo "FAIL: $*"; for f in "$dir"/*.txt; do echo "--- $f"; cat "$f"; done; exit 1; }
rm -rf "$dir" && mkdir -p "$dir"
"$octasim" net "$model" "$@" --no-progress --save-calibration "$dir/table.json" \
  --output "$dir/a.npy" >"$dir/a.txt" 2>&1 || fail "the calibrating run exited $?"
[ -s "$dir/table.json" ] || fail "no table written"
"$octasim" net "$model" "$@" --no-progress --calibration-table "$dir/table.json" \
  --calib-images 1 --output "$dir/b.npy" >"$dir/b.txt" 2>&1 || fail "the run from the table exited $?"
"$octasim" net "$model" "$@" --no-progress --calib-images 1 --output "$dir/c.npy" \
  >"$dir/c.txt" 2>&1 || fail "the control run exited $?"
grep -q "calibration table" "$dir/b.txt" || fail "the second run does not say it used the table"
[ -s "$dir/a.npy" ] || fail "no output written"
cmp -s "$dir/a.npy" "$dir/c.npy" && fail "control: calibrating on one image changes nothing"
cmp "$dir/a.npy" "$dir/b.npy" || fail "outputs differ"
exit 0
