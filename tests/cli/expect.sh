#!/usr/bin/env bash
# expect.sh EXIT STREAM REGEX -- COMMAND...
# Runs COMMAND; passes when it exits with EXIT and STREAM (stdout|stderr) matches REGEX.
# For a non-zero EXIT, stderr must also be exactly one line (one clear error).
set -u
want_exit=$1 stream=$2 regex=$3
shift 4
out=$(mktemp) err=$(mktemp)
trap 'rm -f "$out" "$err"' EXIT
"$@" >"$out" 2>"$err"
got=$?
fail() { echo "FAIL: $*"; echo "--- stdout"; cat "$out"; echo "--- stderr"; cat "$err"; exit 1; }
[ "$got" -eq "$want_exit" ] || fail "exit $got, expected $want_exit"
if [ "$stream" = stdout ]; then text=$out; else text=$err; fi
grep -Eq -- "$regex" "$text" || fail "$stream does not match /$regex/"
if [ "$want_exit" -ne 0 ]; then
  [ "$(wc -l <"$err")" -eq 1 ] || fail "expected exactly one line on stderr"
fi
exit 0
