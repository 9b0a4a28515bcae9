#!/usr/bin/env bash
# network_layer.sh OCTASIM CFG RTL_CYCLES
# Plays one network-layer trace of ../shared/conformance/nvdla/network-layers on nv_small: it must
# pass (every check_crc, as on NVDLA's RTL) and its `compute` cycles must be within 3% of the
# RTL's, or 2% when the RTL took more than 10,000 cycles.
set -u
octasim=$1 cfg=$2 rtl=$3
[ -f "$cfg" ] || { echo "FAIL: $cfg not found"; exit 1; }
out=$("$octasim" run "$cfg" --config nv_small 2>&1)
if [ $? -ne 0 ]; then echo "FAIL: $cfg did not pass on octasim:"; echo "$out" | tail -3; exit 1; fi
got=$(echo "$out" | sed -n 's/^cycles: trace=[0-9]* compute=\([0-9]*\)$/\1/p')
[ -n "$got" ] || { echo "FAIL: no cycles line"; exit 1; }
bound=3
[ "$rtl" -gt 10000 ] && bound=2
err=$(awk -v a="$got" -v b="$rtl" 'BEGIN { printf "%.2f", (a - b) / b * 100 }')
echo "rtl $rtl octasim $got error ${err}% (bound ${bound}%)"
awk -v e="$err" -v lim="$bound" 'BEGIN { if (e < 0) e = -e; exit !(e <= lim) }' ||
  { echo "FAIL: off by ${err}% > ${bound}%"; exit 1; }
