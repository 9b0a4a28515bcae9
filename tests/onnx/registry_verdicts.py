#!/usr/bin/env python3
"""Every ONNX node test of the registry's operators on the device, against a verdict file.

usage: registry_verdicts.py VERDICTS -- OCTASIM onnx-test --registry NODE_DIR [options...]
       registry_verdicts.py --update VERDICTS -- OCTASIM onnx-test --registry NODE_DIR ...

Runs the command (one process: `octasim onnx-test --registry` selects every node test whose
operators are all registry operators) and compares each test's verdict with VERDICTS, one line a
test, sorted by name:

    PASS test_name
    UNSUPPORTED test_name Op      (the refusal must start with the operator's name, "Op ")

Fails on any FAIL line, on a verdict other than the file's, on an UNSUPPORTED whose reason names
another operator, and on a test the file lacks or the run lacks (ONNX's test data or the registry
changed: update the file and read the difference). PASS means bit-exact with the models/
executor on the device and within ONNX's outputs' FP16 bound (firmware/net/backend_test.hpp): it
is ONNX's expected data that decides it, not this file. --update rewrites VERDICTS from the run
(FAIL lines are never written: the run must have none).
"""

import re
import subprocess
import sys

LINE = re.compile(r"^(PASS|FAIL|UNSUPPORTED) (test_[A-Za-z0-9_]+)(?:: (.*))?$")


def run(cmd):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if p.returncode not in (0, 1, 2):
        sys.exit(f"FAIL: {' '.join(cmd)} exited with {p.returncode}\n{p.stderr}")
    if p.stderr.strip():
        sys.exit(f"FAIL: stderr is not empty:\n{p.stderr}")
    got = {}
    for line in p.stdout.splitlines():
        m = LINE.match(line)
        if m:
            got[m.group(2)] = (m.group(1), m.group(3) or "")
    if not got:
        sys.exit(f"FAIL: no verdicts in the output:\n{p.stdout}")
    return got


def read_verdicts(path):
    want = {}
    with open(path) as f:
        for n, line in enumerate(f, 1):
            parts = line.split()
            if not parts or parts[0].startswith("#"):
                continue
            if parts[0] == "PASS" and len(parts) == 2:
                want[parts[1]] = ("PASS", "")
            elif parts[0] == "UNSUPPORTED" and len(parts) == 3:
                want[parts[1]] = ("UNSUPPORTED", parts[2])
            else:
                sys.exit(f"{path}:{n}: expected 'PASS test' or 'UNSUPPORTED test Op', got {line!r}")
    return want


def operator_of(reason):
    m = re.match(r"([A-Za-z]+)[ :']", reason)
    return m.group(1) if m else "?"


def main():
    args = sys.argv[1:]
    update = args[:1] == ["--update"]
    if update:
        args = args[1:]
    if len(args) < 3 or args[1] != "--":
        sys.exit(__doc__)
    path, cmd = args[0], args[2:]
    got = run(cmd)
    fails = [f"FAIL {t}: {r}" for t, (v, r) in sorted(got.items()) if v == "FAIL"]
    if update:
        if fails:
            sys.exit("\n".join(["not updating: the run has failures"] + fails))
        with open(path, "w") as f:
            f.write("# tests/onnx/registry_verdicts.py: every ONNX node test of the registry's "
                    "operators on the device\n")
            for t, (v, r) in sorted(got.items()):
                f.write(f"PASS {t}\n" if v == "PASS" else f"UNSUPPORTED {t} {operator_of(r)}\n")
        print(f"{path}: {len(got)} tests written")
        return
    want = read_verdicts(path)
    problems = list(fails)
    for t in sorted(set(want) | set(got)):
        if t not in got:
            problems.append(f"{t}: in {path}, not run (update the file)")
        elif t not in want:
            problems.append(f"{t}: run ({got[t][0]}), not in {path} (update the file)")
        elif got[t][0] != "FAIL":
            v, reason = got[t]
            wv, wop = want[t]
            if v != wv:
                problems.append(f"{t}: {v} ({reason}), expected {wv}")
            elif v == "UNSUPPORTED" and operator_of(reason) != wop:
                problems.append(f"{t}: unsupported at {operator_of(reason)} ({reason}), "
                                f"expected at {wop}")
    passed = sum(1 for v, _ in got.values() if v == "PASS")
    print(f"{passed} of {len(got)} pass ({100.0 * passed / len(got):.1f}%), "
          f"{len(got) - passed} unsupported or failed")
    for p in problems:
        print("FAIL:", p)
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()
