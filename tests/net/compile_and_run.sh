#!/usr/bin/env bash
# compile_and_run.sh OCTASIM MODEL DIR CONFIG [RUN_FLAG] -- [COMPILE_ARGS...]
# `octasim compile MODEL --out DIR --config CONFIG COMPILE_ARGS` then `octasim run DIR/net.cfg
# --config CONFIG [RUN_FLAG]` (RUN_FLAG: --functional, or empty for the cycle-level device).
# Passes when both exit 0, the run reports "checks: 6 passed, 0 failed" (the committed
# Fashion-MNIST CNN compiles to 5 DLA layers — each MaxPool on the fly after its convolution —
# each checked by CRC, plus the output file), every device layer record is shown with its ONNX
# nodes in execution order (models/networks/fashion_mnist/README.md; a fused convolution leaves a
# CONV and a PDP record, both for its nodes: 7 in all), and the --report JSON names the ONNX
# nodes of all 7.
set -u
octasim=$1 model=$2 dir=$3 config=$4 run_flag=${5:-}
shift 5
[ "${1:-}" = "--" ] && shift
out=$(mktemp) err=$(mktemp)
trap 'rm -f "$out" "$err"' EXIT
fail() { echo "FAIL: $*"; echo "--- stdout"; cat "$out"; echo "--- stderr"; cat "$err"; exit 1; }

rm -rf "$dir"
"$octasim" compile "$model" --out "$dir" --config "$config" "$@" >"$out" 2>"$err" ||
  fail "octasim compile exited $?"
for f in net.cfg layer_map.json calibration.json; do
  [ -s "$dir/$f" ] || fail "compile wrote no $dir/$f"
done

if [ -n "$run_flag" ]; then
  run_args=("$run_flag")
else
  run_args=(--report "$dir/report.json")  # the report needs the cycle-level device
fi
"$octasim" run "$dir/net.cfg" --config "$config" --no-progress "${run_args[@]}" >"$out" 2>"$err" ||
  fail "octasim run exited $?"
grep -qx "checks: 6 passed, 0 failed" "$out" || fail "not every check passed"

expected=(
  "ONNX: Conv '/conv1/Conv' + Relu '/Relu' + MaxPool '/MaxPool'"
  "ONNX: Conv '/conv1/Conv' + Relu '/Relu' + MaxPool '/MaxPool'"
  "ONNX: LRN '/LRN'"
  "ONNX: Conv '/conv2/Conv' + Relu '/Relu_1' + MaxPool '/MaxPool_1'"
  "ONNX: Conv '/conv2/Conv' + Relu '/Relu_1' + MaxPool '/MaxPool_1'"
  "ONNX: Gemm '/fc1/Gemm' + Relu '/Relu_2'"
  "ONNX: Gemm '/fc2/Gemm'"
)
got=$(grep -o "ONNX: .*" "$out")
want=$(printf '%s\n' "${expected[@]}")
[ "$got" = "$want" ] || fail "ONNX lines differ; expected:
$want"
if [ -z "$run_flag" ]; then
  n=$(grep -c '"onnx_nodes"' "$dir/report.json")
  [ "$n" -eq 7 ] || fail "report.json names ONNX nodes for $n layers, expected 7"
  grep -qF "\"onnx_nodes\": \"Gemm '/fc2/Gemm'\"" "$dir/report.json" ||
    fail "report.json does not map the last layer to Gemm '/fc2/Gemm'"
fi
exit 0
