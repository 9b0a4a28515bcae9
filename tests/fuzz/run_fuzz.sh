#!/usr/bin/env bash
# Runs the libFuzzer targets of an OCTASIM_FUZZ build (tests/fuzz): each over its seed corpus and
# regression inputs, then fuzzing for SECONDS (or until RUNS executions, when RUNS is set), with
# the limits that make a huge allocation, a leak of memory or a hang a finding. New inputs go to
# BUILD/fuzz-corpus/<target> (not committed); a crash is saved under BUILD/fuzz-artifacts/<target>/
# and fails the run. Prints one summary line per target from libFuzzer's final stats.
#   run_fuzz.sh BUILD SECONDS [TARGET...]      (default: every target)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
build="$1"
seconds="$2"
shift 2
targets=("$@")
[ ${#targets[@]} -eq 0 ] && targets=(trace_cfg dat npy hw_config spec txn ppu ppu_node onnx calibration player)

dict_of() {
  case "$1" in
    trace_cfg | player | txn) echo trace.dict ;;
    dat) echo dat.dict ;;
    npy) echo npy.dict ;;
    hw_config | calibration) echo json.dict ;;
    spec) echo spec.dict ;;
    *) echo "" ;;
  esac
}

summary=()
status=0
for t in "${targets[@]}"; do
  exe="$build/tests/fuzz/octasim_fuzz_$t"
  [ -x "$exe" ] || { echo "run_fuzz.sh: no $exe (build the octasim_fuzz_all target)" >&2; exit 2; }
  work="$build/fuzz-corpus/$t"
  artifacts="$build/fuzz-artifacts/$t"
  log="$build/fuzz-logs/$t.log"
  mkdir -p "$work" "$artifacts" "$(dirname "$log")"
  args=(-rss_limit_mb=2048 -malloc_limit_mb=1024 -timeout=10 -max_len=65536
        -print_final_stats=1 -artifact_prefix="$artifacts/")
  if [ -n "${RUNS:-}" ]; then args+=(-runs="$RUNS"); else args+=(-max_total_time="$seconds"); fi
  dict="$(dict_of "$t")"
  [ -n "$dict" ] && args+=(-dict="$here/$dict")
  dirs=("$work" "$here/corpus/$t")
  [ -d "$here/regressions/$t" ] && dirs+=("$here/regressions/$t")
  if [ -n "${RUNS:-}" ]; then what="$RUNS runs"; else what="$seconds s"; fi
  echo "== fuzz $t: $what (log $log)"
  start=$(date +%s)
  if "$exe" "${args[@]}" "${dirs[@]}" >"$log" 2>&1; then
    result=ok
  else
    result=FAILED
    status=1
    grep -E 'ERROR|SUMMARY|what\(\)|Test unit written|^ +#([0-9]|1[0-9]) ' "$log" | head -n 30 >&2
  fi
  end=$(date +%s)
  last="$(grep -E '^#[0-9]+[[:space:]]+(DONE|INITED)' "$log" | tail -n 1 || true)"
  execs="$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")"
  rate="$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log")"
  cov="$(echo "$last" | grep -oE 'cov: [0-9]+ ft: [0-9]+' || true)"
  summary+=("$(printf '%-12s %-6s %10s execs %7s exec/s  %-22s %4ss' "$t" "$result" \
    "${execs:-?}" "${rate:-?}" "${cov:-?}" "$((end - start))")")
done
echo "== fuzz summary"
printf '%s\n' "${summary[@]}"
exit $status
