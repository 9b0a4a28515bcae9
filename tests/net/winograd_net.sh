#!/usr/bin/env bash
# winograd_net.sh OCTASIM MODEL IMAGES LABELS DIR
# The compiler's Winograd mode on a trained network: the Fashion-MNIST CNN on nv_full with its
# first layer unfolded (--no-fold: a 3x3, stride-1 convolution with a 28x28 output, which the
# compiler runs in Winograd mode with --winograd on) against the same run with --no-winograd, on
# 500 test images:
# - the Winograd run marks conv1 [Winograd] and reports fewer device MACs than network MACs
#   (16 products per 2x2 outputs instead of 36), the direct run marks nothing and reports none;
# - both are bit-exact against the quantized reference (the device reads the transformed weights
#   and the input from the CV-SRAM where the compiler placed them);
# - conv1 takes fewer cycles in Winograd mode;
# - accuracy: Winograd's top-1 within 1.5 points of direct convolution's (the transformed
#   weights are quantized per channel and PRA drops 2 bits of the transformed input, so some
#   loss is expected; a broken transform or scale would drop it to chance, 10%).
set -u
octasim=$1 model=$2 images=$3 labels=$4 dir=$5
fail() { echo "FAIL: $*"; for f in "$dir"/*.txt; do echo "--- $f"; cat "$f"; done; exit 1; }
rm -rf "$dir" && mkdir -p "$dir"
run() {
  "$octasim" net "$model" --config nv_full --no-fold --input "$images" --labels "$labels" \
    --limit 500 --functional --no-progress "$@"
}
run --winograd on >"$dir/wino.txt" 2>&1 || fail "Winograd run exited $?"
run --no-winograd --output "$dir/direct.npy" >"$dir/direct.txt" 2>&1 || fail "direct run exited $?"
# --winograd auto (the default) measures conv1's output error both ways on the calibration images
# and keeps direct mode: Winograd's is more than 10% above direct's (firmware/net/winograd.hpp).
run --output "$dir/auto.npy" >"$dir/auto.txt" 2>&1 || fail "auto run exited $?"
line=$(grep -E "^ +0 +CONV .*Conv '/conv1/Conv'" "$dir/auto.txt")
[[ $line =~ \[direct:\ error\ Winograd\ ([0-9.]+)%,\ direct\ ([0-9.]+)%\]$ ]] ||
  fail "auto: conv1 does not show its measured errors: $line"
/usr/bin/python3 -c "import sys; w, d = map(float, sys.argv[1:]); sys.exit(0 if w > 1.1 * d > 0 else 1)" \
  "${BASH_REMATCH[1]}" "${BASH_REMATCH[2]}" || fail "auto kept direct mode without the error to show for it"
cmp -s "$dir/auto.npy" "$dir/direct.npy" || fail "auto (all direct) differs from --no-winograd"
grep -qE "^ +0 +CONV .*Conv '/conv1/Conv'.* \[Winograd\]$" "$dir/wino.txt" ||
  fail "conv1 is not marked [Winograd]"
[ "$(grep -c '\[Winograd\]' "$dir/wino.txt")" -eq 1 ] || fail "expected one Winograd layer"
! grep -q '\[Winograd\]' "$dir/direct.txt" || fail "--no-winograd still uses Winograd"
grep -qE '^device macs: [0-9]+$' "$dir/wino.txt" || fail "no device macs line"
! grep -qE '^device macs:' "$dir/direct.txt" || fail "direct run reports device macs"
for f in wino direct; do
  grep -qE '^device vs quantized reference: 500 of 500 images bit-exact$' "$dir/$f.txt" ||
    fail "$f: not bit-exact"
done
/usr/bin/python3 - "$dir/wino.txt" "$dir/direct.txt" <<'PY' || fail "cycles or accuracy"
import re, sys
def read(path):
    text = open(path).read()
    top1 = float(re.search(r"^top-1: device ([0-9.]+)%", text, re.M).group(1))
    conv1 = int(re.search(r"^ +0 +CONV +([0-9]+) ", text, re.M).group(1))
    macs = int(re.search(r"^macs: ([0-9]+)$", text, re.M).group(1))
    return top1, conv1, macs, text
w_top1, w_conv1, w_macs, w_text = read(sys.argv[1])
d_top1, d_conv1, d_macs, _ = read(sys.argv[2])
device = int(re.search(r"^device macs: ([0-9]+)$", w_text, re.M).group(1))
assert w_macs == d_macs, (w_macs, d_macs)
# conv1: 28x28 outputs, 16 kernels, 1 channel: 9 products per output direct, 4 in Winograd.
assert d_macs - device == 28 * 28 * 16 * 1 * (9 - 4), (d_macs, device)
assert w_conv1 < d_conv1, (w_conv1, d_conv1)
assert abs(w_top1 - d_top1) <= 1.5 and w_top1 > 85.0, (w_top1, d_top1)
print(f"conv1 {w_conv1} cycles Winograd, {d_conv1} direct; top-1 {w_top1}% vs {d_top1}%")
PY
