#!/usr/bin/env bash
# alexnet_groups.sh OCTASIM ALEXNET.onnx: `octasim net` on nv_full (functional device) runs
# AlexNet's grouped convolutions group by group — conv2 (2 groups of 48 input channels, each
# reading a 64-channel window: 32 INT8 channels per atom), conv4 and conv5 (groups of 192) — each
# group a row of its own, bit-exact; `macs:` stays the network's count and `device macs:` adds
# only conv2's windows: 27*27*128*5*5*(64-48)*2 = 74,649,600 over 724,406,816. With
# --dense-groups every grouped convolution is one dense layer again: conv2 27*27*256*5*5*48 +
# conv4 13*13*384*3*3*192 + conv5 13*13*256*3*3*192 = 410,849,280 more.
set -u
octasim=$1 model=$2
out=$(mktemp)
trap 'rm -f "$out"' EXIT
fail() { echo "FAIL: $*"; cat "$out"; exit 1; }
expect() { grep -Eq -- "$1" "$out" || fail "no line matches /$1/"; }
"$octasim" net "$model" --config nv_full --functional --no-progress >"$out" 2>&1 || fail "exit $?"
for node in conv2 conv4 conv5; do
  n=${node#conv}
  for g in 1 2; do expect " Conv '$node' group $g/2 \+ Relu 'relu$n'$"; done
done
expect "^macs: 724406816$"
expect "^device macs: 799056416$"
expect "^device vs quantized reference: 1 of 1 images bit-exact$"
"$octasim" net "$model" --config nv_full --functional --no-progress --dense-groups >"$out" 2>&1 ||
  fail "--dense-groups: exit $?"
! grep -q " group " "$out" || fail "--dense-groups: a group layer"
expect " Conv 'conv4' \+ Relu 'relu4'$"
expect "^macs: 724406816$"
expect "^device macs: 1135256096$"
expect "^device vs quantized reference: 1 of 1 images bit-exact$"
exit 0
