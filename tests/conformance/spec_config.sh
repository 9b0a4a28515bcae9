#!/usr/bin/env bash
# NVDLA spec files as configurations and case-insensitive trace names, end to end.
#   spec_config.sh run OCTASIM TRACE SPEC NAME KEY=VALUE...
#     `octasim run TRACE --config SPEC` passes on configuration NAME, and its --report shows
#     each KEY (of the report's "config" section) with VALUE.
#   spec_config.sh same OCTASIM TRACE CONFIG_A CONFIG_B
#     the trace passes on both configurations with the same cycle counts.
#   spec_config.sh lowercase OCTASIM TRACE
#     a copy of the trace with every name outside quoted file names in lower case passes with
#     the same cycle counts as the original.
set -u
mode=$1 octasim=$2 trace=$3
shift 3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

# Runs octasim, keeps stdout in $tmp/$1.out; prints "PASS-line|cycles-line".
result() {
  local tag=$1
  shift
  "$octasim" run "$@" >"$tmp/$tag.out" 2>"$tmp/$tag.err" || {
    cat "$tmp/$tag.out" "$tmp/$tag.err"
    fail "octasim run $* exited non-zero"
  }
  grep -q "^checks: [1-9][0-9]* passed, 0 failed$" "$tmp/$tag.out" || fail "$tag: checks did not all pass"
  grep "^cycles: " "$tmp/$tag.out"
}

case $mode in
  run)
    spec=$1 name=$2
    shift 2
    result spec "$trace" --config "$spec" --report "$tmp/report.json" >/dev/null
    grep -q ": PASS on $name\$" "$tmp/spec.out" || fail "no 'PASS on $name' in: $(tail -3 "$tmp/spec.out")"
    grep -q "^note: .*has no octasim configuration key" "$tmp/spec.out" || fail "no note for the unmapped defines"
    /usr/bin/python3 - "$tmp/report.json" "$@" <<'PY' || exit 1
import json, sys
config = json.load(open(sys.argv[1]))["config"]
for pair in sys.argv[2:]:
    key, want = pair.split("=")
    got = config.get(key)
    if str(got) != want:
        sys.exit(f"FAIL: report config {key} = {got}, want {want}")
PY
    ;;
  same)
    a=$(result a "$trace" --config "$1") || { echo "$a"; exit 1; }
    b=$(result b "$trace" --config "$2") || { echo "$b"; exit 1; }
    [ "$a" = "$b" ] || fail "$1: $a, $2: $b"
    echo "$1 and $2: $a"
    ;;
  lowercase)
    dir=$(dirname "$trace")
    cp -r "$dir" "$tmp/trace"
    copy="$tmp/trace/$(basename "$trace")"
    /usr/bin/python3 - "$trace" "$copy" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
# Lower-case everything but quoted strings (file names).
parts = re.split(r'("[^"]*")', text)
open(sys.argv[2], "w").write("".join(p if p.startswith('"') else p.lower() for p in parts))
PY
    grep -q "nvdla_" "$copy" || fail "the copy has no lower-case register names"
    cmp -s "$trace" "$copy" && fail "the copy is the same as the trace"
    a=$(result original "$trace") || { echo "$a"; exit 1; }
    b=$(result lower "$copy") || { echo "$b"; exit 1; }
    [ "$a" = "$b" ] || fail "original: $a, lower case: $b"
    echo "lower-case copy: $b"
    ;;
  *) fail "unknown mode $mode" ;;
esac
exit 0
