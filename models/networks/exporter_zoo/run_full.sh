#!/usr/bin/env bash
# run_full.sh EXPORT_DIR [CONFIG ...]
# Runs the full-size torchvision networks that `export.py --full EXPORT_DIR` wrote through
# `octasim net --precision fp16 --functional --expect` on each CONFIG (default nv_full) and
# prints one Markdown table row per model and configuration: layers, the exit status, the
# device-vs-quantized-reference line, each output's relative L2 error against PyTorch (the
# issue's bound: 5%, passed as --max-rel-error so the exit status says it) and the wall time.
# Each run's full output goes to EXPORT_DIR/logs/NAME.CONFIG.txt.
#
# Environment: OCTASIM (default: build/sim/app/octasim beside this repository's root),
# PRECISION (default fp16), BOUND (default 0.05), MODELS (default: every NAME.onnx in EXPORT_DIR).
# Exit status: 0 when every run exited 0 (bit-exact and within the bound), 1 otherwise.
set -u
[ $# -ge 1 ] || { echo "usage: $0 EXPORT_DIR [CONFIG ...]" >&2; exit 2; }
dir=$1
shift
configs=("$@")
[ ${#configs[@]} -gt 0 ] || configs=(nv_full)
root=$(cd "$(dirname "$0")/../../.." && pwd)
octasim=${OCTASIM:-$root/build/sim/app/octasim}
precision=${PRECISION:-fp16}
bound=${BOUND:-0.05}
[ -x "$octasim" ] || { echo "$0: no octasim at $octasim (set OCTASIM)" >&2; exit 2; }
if [ -n "${MODELS:-}" ]; then
  read -r -a models <<<"$MODELS"
else
  models=()
  for f in "$dir"/*.onnx; do models+=("$(basename "$f" .onnx)"); done
fi
mkdir -p "$dir/logs"
status=0
echo "| model | config | layers | exit | device vs quantized reference | relative L2 error vs PyTorch | wall time |"
echo "|---|---|---:|---:|---|---|---:|"
for name in "${models[@]}"; do
  outs=("$dir/${name}"_output*.npy)
  for config in "${configs[@]}"; do
    log="$dir/logs/$name.$config.txt"
    start=$(date +%s.%N)
    "$octasim" net "$dir/$name.onnx" --input "$dir/${name}_input.npy" --config "$config" \
      --precision "$precision" --functional --no-progress --expect "${outs[@]}" \
      --max-rel-error "$bound" >"$log" 2>&1
    rc=$?
    end=$(date +%s.%N)
    [ $rc -eq 0 ] || status=1
    layers=$(sed -nE 's/^octasim net: .* on [^:]+: ([0-9]+) layers.*/\1/p' "$log")
    exact=$(sed -nE 's/^device vs quantized reference: (.*)$/\1/p' "$log")
    errors=$(sed -nE "s/^output '([^']*)' vs .*: relative L2 error ([^,]+), .*/\1 \2/p" "$log" |
      paste -sd ';' -)
    if [ -z "$errors" ]; then
      errors=$(grep -m1 -E '^octasim: error:' "$log" | sed -E 's/\|/\\|/g; s/^octasim: error: [^:]*: //')
    fi
    printf '| %s | %s | %s | %s | %s | %s | %.1f s |\n' "$name" "$config" "${layers:--}" "$rc" \
      "${exact:--}" "${errors:--}" "$(echo "$end - $start" | bc)"
  done
done
exit $status
