#!/usr/bin/python3
"""Outputs are never half-written: a run that fails or is interrupted leaves no new report,
timeline, VCD or .npy file and an existing one unchanged; SIGINT / SIGTERM stop a long run at a
safe point with "octasim: interrupted|terminated at cycle N" and exit 130 / 143.

  outputs_test.py OCTASIM NV_SMALL_TRACES_DIR MODEL.onnx WORK_DIR
"""

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time

failures = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what)
    if not ok:
        failures.append(what)


def listing(d):
    return sorted(os.listdir(d))


def run(cmd, cwd, timeout=600):
    p = subprocess.run(cmd, cwd=cwd, capture_output=True, timeout=timeout)
    return p.returncode, p.stdout.decode(errors="replace"), p.stderr.decode(errors="replace")


def long_trace(traces, work, repeats):
    """NVDLA's dc_35x22x54 convolution trace with its layer programmed `repeats` times, the
    register groups alternating as a driver would (S_POINTER 0/1, interrupts SDP_0/SDP_1), and
    the trace's own CRC checked after the last: a run of several seconds."""
    name = "dc_35x22x54_6x8x54x29_int8_0"
    src = os.path.join(traces, name)
    dest = os.path.join(work, "long_trace")
    shutil.rmtree(dest, ignore_errors=True)
    shutil.copytree(src, dest)
    lines = open(os.path.join(src, name + ".cfg")).read().splitlines()
    first = next(i for i, l in enumerate(lines) if "S_POINTER" in l)
    layer = [l for l in lines[first:] if l.startswith(("reg_write", "poll_"))]
    crc = next(l for l in lines if l.startswith("check_crc"))
    out = lines[:first]
    for i in range(repeats):
        out += [l.replace("S_POINTER_0, 0x0", f"S_POINTER_0, 0x{i % 2:x}") for l in layer]
        out.append(f"intr_notify(SDP_{i % 2}, sync_{i});")
    out.append(re.sub(r"check_crc\(\w+,", f"check_crc(sync_{repeats - 1},", crc))
    path = os.path.join(dest, "long.cfg")
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")
    return path


def handler_installed(pid, sig):
    """True once process `pid` catches `sig` (its SigCgt mask in /proc): octasim installs its
    stop handlers when the simulation starts."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("SigCgt:"):
                    return int(line.split()[1], 16) >> (sig - 1) & 1 == 1
    except FileNotFoundError:
        pass
    return False


def default_signals():
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


def interrupt(cmd, cwd, sig, label, settle=2.0):
    """Starts `cmd`, sends `sig` `settle` seconds after the stop handlers are installed (past
    loading the trace's memory, also in the sanitizer build), and checks the outcome: exit 128 +
    sig, one stderr line naming the cycle, no file added to or changed in `cwd`."""
    before = {n: open(os.path.join(cwd, n), "rb").read() for n in listing(cwd)}
    # Default dispositions in the child, as in a terminal (a shell's background job would
    # inherit SIGINT ignored, and octasim keeps an ignored signal ignored).
    p = subprocess.Popen(cmd, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                         preexec_fn=default_signals)
    deadline = time.monotonic() + 300
    while not handler_installed(p.pid, sig) and p.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
    time.sleep(settle)
    sent = time.monotonic()
    still_running = p.poll() is None
    p.send_signal(sig)
    try:
        _, err = p.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        p.kill()
        _, err = p.communicate()
    stopped_in = time.monotonic() - sent
    err = err.decode(errors="replace")
    word = "interrupted" if sig == signal.SIGINT else "terminated"
    check(still_running, f"{label}: still running when the signal was sent")
    check(p.returncode == 128 + sig, f"{label}: exit {128 + sig} (got {p.returncode})")
    m = re.fullmatch(rf"octasim: {word} at cycle (\d+)\n", err)
    check(m is not None and int(m.group(1)) > 0,
          f"{label}: stderr is one line 'octasim: {word} at cycle N', N > 0 (got {err!r})")
    check(stopped_in < 10, f"{label}: stopped {stopped_in:.2f} s after the signal (< 10 s)")
    after = {n: open(os.path.join(cwd, n), "rb").read() for n in listing(cwd)}
    check(sorted(after) == sorted(before), f"{label}: no file left behind ({sorted(after)})")
    check(after == before, f"{label}: existing files unchanged")


def main():
    octasim, traces, model, work = sys.argv[1:5]
    if not os.path.isdir(traces):
        print(f"SKIP: {traces} not found")
        return 77
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    out = os.path.join(work, "out")
    os.makedirs(out)
    dc = os.path.join(traces, "dc_35x22x54_6x8x54x29_int8_0", "dc_35x22x54_6x8x54x29_int8_0.cfg")
    outputs = ["--report", "r.json", "--timeline", "t.json", "--vcd", "w.vcd"]

    # A run that fails with a user error after the simulation started (its interrupt does not
    # arrive within the limit): exit 2, one line, no output file.
    code, _, err = run([octasim, "run", dc, "--no-progress", "--timeout-cycles", "1000"] + outputs,
                       out)
    check(code == 2 and re.fullmatch(r"octasim: error: .*did not arrive within 1000 cycles\n",
                                     err) is not None,
          f"failing run: exit 2 with one error line (got {code}, {err!r})")
    check(listing(out) == [], f"failing run: no report, timeline or VCD left ({listing(out)})")

    # An existing report stays as it was when a later run fails.
    with open(os.path.join(out, "r.json"), "w") as f:
        f.write("the previous report\n")
    code, _, _ = run([octasim, "run", dc, "--no-progress", "--timeout-cycles", "1000"] + outputs,
                     out)
    check(code == 2, "failing run over an existing report: exit 2")
    check(open(os.path.join(out, "r.json")).read() == "the previous report\n",
          "failing run: the existing report is unchanged")
    check(listing(out) == ["r.json"], f"failing run: nothing else left ({listing(out)})")

    # An unwritable output is refused before the run, and creates nothing.
    code, _, err = run([octasim, "run", dc, "--no-progress", "--report", "r.json", "--timeline",
                        "missing/t.json"], out)
    check(code == 2 and "missing/t.json: cannot write file" in err,
          f"unwritable timeline: exit 2 naming it (got {code}, {err!r})")
    check(open(os.path.join(out, "r.json")).read() == "the previous report\n",
          "unwritable timeline: the report is not written either")

    # The same run, passing: all three written whole (JSON that parses, a VCD with its header).
    code, _, _ = run([octasim, "run", dc, "--no-progress"] + outputs, out)
    check(code == 0, f"passing run: exit 0 (got {code})")
    check(listing(out) == ["r.json", "t.json", "w.vcd"], f"passing run: outputs {listing(out)}")
    report = json.load(open(os.path.join(out, "r.json")))
    check(report.get("result", {}).get("checks_passed") == 1, "passing run: the report is whole")
    json.load(open(os.path.join(out, "t.json")))
    vcd = open(os.path.join(out, "w.vcd")).read()
    check(vcd.startswith("$date") and "$enddefinitions" in vcd, "passing run: the VCD is whole")

    # SIGINT and SIGTERM during a long trace run: nothing new, the old outputs untouched.
    trace = long_trace(traces, work, 150)
    interrupt([octasim, "run", trace, "--no-progress"] + outputs, out, signal.SIGINT,
              "SIGINT during octasim run")
    interrupt([octasim, "run", trace, "--no-progress"] + outputs, out, signal.SIGTERM,
              "SIGTERM during octasim run")
    # The same during `octasim net` over many images (report, timeline and .npy requested).
    net_out = os.path.join(work, "net_out")
    os.makedirs(net_out)
    interrupt([octasim, "net", model, "--limit", "20000", "--no-progress", "--report", "n.json",
               "--timeline", "nt.json", "--output", "o.npy"], net_out, signal.SIGINT,
              "SIGINT during octasim net")

    if failures:
        print(f"\n{len(failures)} checks failed")
        return 1
    print("\nall checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
