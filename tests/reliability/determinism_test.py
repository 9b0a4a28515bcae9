#!/usr/bin/python3
"""Determinism: the same run twice gives byte-identical outputs — `octasim run` on NVDLA's
convolution trace (stdout, --report, --timeline, --vcd) and `octasim net` on a small network
(stdout, --report, --timeline, --output .npy). The only host-dependent fields are removed first:
the VCD's $date block (SystemC writes the wall-clock time) and net's "host time:" line. The
reports carry no host time.

  determinism_test.py OCTASIM NV_SMALL_TRACES_DIR MODEL.onnx WORK_DIR
"""

import difflib
import os
import re
import shutil
import subprocess
import sys

# The host-time fields: each output's pattern, removed (exactly once) before comparing.
VCD_DATE = re.compile(rb"\A\$date\n.*?\$end\n", re.S)
NET_HOST_TIME = re.compile(rb"^host time: [0-9.]+ s\n", re.M)


def strip_host_time(name, data, host_time):
    pattern = host_time.get(name)
    if pattern is None:
        return data
    data, n = pattern.subn(b"", data)
    if n != 1:
        raise SystemExit(f"FAIL: {name}: expected one host-time field, found {n}")
    return data


def run_twice(label, cmd, files, work, host_time):
    """Runs `cmd` in two fresh directories and compares stdout and each of `files`, with the
    fields `host_time` names removed."""
    outputs = []
    for i in (1, 2):
        d = os.path.join(work, f"{label}_{i}")
        shutil.rmtree(d, ignore_errors=True)
        os.makedirs(d)
        p = subprocess.run(cmd, cwd=d, capture_output=True, timeout=600)
        if p.returncode != 0:
            print(f"FAIL: {label} run {i}: exit {p.returncode}\n{p.stderr.decode()}")
            return False
        got = {"stdout": strip_host_time("stdout", p.stdout, host_time)}
        for f in files:
            with open(os.path.join(d, f), "rb") as fh:
                got[f] = strip_host_time(f, fh.read(), host_time)
        outputs.append(got)
    ok = True
    for name in outputs[0]:
        a, b = outputs[0][name], outputs[1][name]
        if not a:
            print(f"FAIL: {label}: {name} is empty")
            ok = False
        elif a != b:
            print(f"FAIL: {label}: {name} differs between two runs")
            diff = difflib.unified_diff(a.decode(errors="replace").splitlines(),
                                        b.decode(errors="replace").splitlines(), lineterm="")
            for line in list(diff)[:20]:
                print("  " + line)
            ok = False
        else:
            print(f"ok   {label}: {name} identical ({len(a)} bytes)")
    return ok


def main():
    octasim, traces, model, work = sys.argv[1:5]
    if not os.path.isdir(traces):
        print(f"SKIP: {traces} not found")
        return 77
    os.makedirs(work, exist_ok=True)
    dc = os.path.join(traces, "dc_35x22x54_6x8x54x29_int8_0", "dc_35x22x54_6x8x54x29_int8_0.cfg")
    ok = run_twice("run", [octasim, "run", dc, "--no-progress", "--report", "r.json", "--timeline",
                           "t.json", "--timeline-detail", "dma", "--vcd", "w.vcd"],
                   ["r.json", "t.json", "w.vcd"], work, {"w.vcd": VCD_DATE})
    ok &= run_twice("net", [octasim, "net", model, "--limit", "3", "--no-progress", "--report",
                            "n.json", "--timeline", "nt.json", "--output", "o.npy"],
                    ["n.json", "nt.json", "o.npy"], work, {"stdout": NET_HOST_TIME})
    if not ok:
        return 1
    print("all outputs identical")
    return 0


if __name__ == "__main__":
    sys.exit(main())
