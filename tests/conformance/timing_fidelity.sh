#!/usr/bin/env bash
# timing_fidelity.sh OCTASIM NVDLA_DIR UNIT_REGEX MAX_MEAN_PCT MAX_ONE_PCT
# Runs every trace of rtl-cycles-nv_small.tsv whose name matches UNIT_REGEX and that NVDLA's
# RTL passed, compares octasim's `compute` cycles with the RTL's, prints the table, and fails
# when the mean absolute error exceeds MAX_MEAN_PCT or any trace exceeds MAX_ONE_PCT.
set -u
octasim=$1 nvdla=$2 regex=$3 max_mean=$4 max_one=$5
table=$nvdla/rtl-cycles-nv_small.tsv
[ -f "$table" ] || { echo "SKIP: $table not found"; exit 77; }
printf '%-36s %10s %10s %8s\n' trace rtl octasim error
n=0 sum=0 worst=0 worst_name="" failed=0
while IFS=$'\t' read -r name result trace_cycles compute; do
  [ "$name" = test ] && continue
  [[ "$name" =~ $regex ]] || continue
  [ "$result" = PASS ] || continue
  cfg=$nvdla/traces/nv_small/$name/$name.cfg
  out=$("$octasim" run "$cfg" 2>&1)
  if [ $? -ne 0 ]; then echo "FAIL: $name did not pass on octasim:"; echo "$out" | tail -3; failed=1; continue; fi
  got=$(echo "$out" | sed -n 's/^cycles: trace=[0-9]* compute=\([0-9]*\)$/\1/p')
  [ -n "$got" ] || { echo "FAIL: $name printed no cycles line"; failed=1; continue; }
  err=$(awk -v a="$got" -v b="$compute" 'BEGIN { e = (a - b) / b * 100; printf "%.1f", e }')
  abs=${err#-}
  printf '%-36s %10d %10d %7s%%\n' "$name" "$compute" "$got" "$err"
  n=$((n + 1))
  sum=$(awk -v s="$sum" -v a="$abs" 'BEGIN { print s + a }')
  if awk -v a="$abs" -v w="$worst" 'BEGIN { exit !(a > w) }'; then worst=$abs worst_name=$name; fi
done < "$table"
[ "$n" -gt 0 ] || { echo "FAIL: no trace matched $regex"; exit 1; }
mean=$(awk -v s="$sum" -v n="$n" 'BEGIN { printf "%.2f", s / n }')
echo "traces: $n  mean |error|: ${mean}%  worst: ${worst}% ($worst_name)"
awk -v m="$mean" -v lim="$max_mean" 'BEGIN { exit !(m <= lim) }' || { echo "FAIL: mean |error| ${mean}% > ${max_mean}%"; failed=1; }
awk -v w="$worst" -v lim="$max_one" 'BEGIN { exit !(w <= lim) }' || { echo "FAIL: ${worst_name} off by ${worst}% > ${max_one}%"; failed=1; }
exit $failed
