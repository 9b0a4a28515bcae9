#!/usr/bin/env bash
# verdict.sh EXIT REGEX -- COMMAND...: passes when COMMAND exits with EXIT, prints REGEX on
# stdout and nothing on stderr (an onnx-test verdict is one stdout line, whatever it is).
set -u
want_exit=$1 regex=$2
shift 3
out=$(mktemp) err=$(mktemp)
trap 'rm -f "$out" "$err"' EXIT
"$@" >"$out" 2>"$err"
got=$?
fail() { echo "FAIL: $*"; echo "--- stdout"; cat "$out"; echo "--- stderr"; cat "$err"; exit 1; }
[ "$got" -eq "$want_exit" ] || fail "exit $got, expected $want_exit"
grep -Eq -- "$regex" "$out" || fail "stdout does not match /$regex/"
[ ! -s "$err" ] || fail "stderr is not empty"
exit 0
