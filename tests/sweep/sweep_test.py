"""`octasim sweep` end to end (tests/sweep/CMakeLists.txt runs one check per ctest entry).

    sweep_test.py CHECK OCTASIM WORKDIR NVDLA_DIR MODEL [MPIRUN]

Every expected value comes from a separate, sequential `octasim run` / `octasim net` of the same
(input, configuration) pair that this script runs itself, or from the NVDLA traces' layout; the
sweep's table must agree with them row for row. Exit 77: skipped (NVDLA traces absent).

checks:
  traces      every public nv_small trace x {nv_small, a JSON configuration}, --jobs 2
  traces-mpi  the same under `mpirun --oversubscribe -np 2`: both ranks ran simulations, and the
              table equals the --jobs 2 table apart from host_seconds and rank
  grid        a network x dram_bytes_per_cycle=2,4,8 x mac_atomic_k=8,16 on two configurations
  timeout     a trace whose poll never ends, killed by --timeout: the sweep completes; the
              same trace's child crashing (SIGSEGV) is an error row too
  resume      --resume keeps the output's rows and runs only the missing ones (CSV and JSON)
  order       longest first: by the inputs' bytes, then by the previous table's host seconds
  interrupt   Ctrl-C (SIGINT) mid-sweep: children killed, the rows so far written, exit 1;
              --resume then runs the rest
  errors      bad input: one clear error line, exit status 2, nothing run
  errors-mpi  a bad grid key under mpirun: exit status 2, the error printed once
  slurm-example  examples/sweep_slurm.sh run outside Slurm (mpirun -np 2 on this machine): the
              table it writes equals a --jobs 2 sweep's apart from host_seconds and rank
  no-mpi      (an octasim built without MPI) started as if under mpirun: a clear error
"""

import csv
import glob
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time

CHECK, OCTASIM, WORK, NVDLA, MODEL = sys.argv[1:6]
MPIRUN = sys.argv[6] if len(sys.argv) > 6 else "mpirun"
# OpenMPI as root (CI's container) and without a network: shared memory between local ranks.
# PMIx's "hash" data store avoids the shared-memory store's locking errors seen in some
# containers.
MPI = [MPIRUN, "--oversubscribe", "-np", "2", "--mca", "btl", "self,vader"]
MPI_ENV = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
               PMIX_MCA_gds="hash")
RESULT_OF_EXIT = {0: "pass", 1: "fail", 2: "refused"}

failures = []


def check(ok, what):
    if not ok:
        failures.append(what)
        print("FAIL:", what)


def run(args, env=None, timeout=600):
    return subprocess.run(args, capture_output=True, text=True, env=env, timeout=timeout)


def sweep(args, mpi=False):
    cmd = (MPI if mpi else []) + [OCTASIM, "sweep"] + args
    p = run(cmd, env=MPI_ENV if mpi else None)
    if p.returncode != 0:
        print(" ".join(cmd), "\n", p.stdout[-3000:], p.stderr[-3000:])
    return p


def read_rows(path):
    if path.endswith(".json"):
        with open(path) as f:
            return json.load(f)["rows"]
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def num(v):
    return None if v in ("", None) else float(v)


def nv_small_traces():
    traces = sorted(glob.glob(os.path.join(NVDLA, "traces", "nv_small", "*", "*.cfg")))
    if not traces:
        print(f"SKIP: no NVDLA traces under {NVDLA}")
        sys.exit(77)
    return traces


def fresh(name):
    d = os.path.join(WORK, name)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    return d


def sequential(kind, path, config, d, tag, extra=()):
    """The pair run alone, as a user would: (result, stderr line, report or None)."""
    report = os.path.join(d, f"seq-{tag}.json")
    if kind == "trace":
        args = [OCTASIM, "run", path, "--config", config, "--report", report, "--no-progress"]
    else:
        args = [OCTASIM, "net", path, "--config", config, "--timing-only", "--report", report,
                "--no-progress", *extra]
    p = run(args)
    result = RESULT_OF_EXIT.get(p.returncode, "error")
    rep = None
    if p.returncode in (0, 1):
        with open(report) as f:
            rep = json.load(f)
    line = p.stderr.strip().splitlines()[-1] if p.stderr.strip() else ""
    return result, re.sub(r"^octasim: error: ", "", line), rep


def compare_trace_rows(rows, d):
    """Each row against a sequential `octasim run` of its pair."""
    for i, r in enumerate(rows):
        config = r["config"]
        result, line, rep = sequential("trace", r["input"], config, d, i)
        what = f"{os.path.basename(r['input'])} on {config}"
        check(r["result"] == result, f"{what}: result {r['result']}, octasim run says {result}")
        if rep is None:
            check(r["message"] == line, f"{what}: message {r['message']!r} != {line!r}")
            check(num(r["trace_cycles"]) is None, f"{what}: a refused row has no cycles")
            continue
        res = rep["result"]
        check(num(r["trace_cycles"]) == res["trace_cycles"],
              f"{what}: trace_cycles {r['trace_cycles']} != {res['trace_cycles']}")
        check(num(r["compute_cycles"]) == res["compute_cycles"],
              f"{what}: compute_cycles {r['compute_cycles']} != {res['compute_cycles']}")
        dram = rep["dram"]["bytes_read"] + rep["dram"]["bytes_written"]
        check(num(r["dram_bytes"]) == dram, f"{what}: dram_bytes {r['dram_bytes']} != {dram}")
        peak = rep["config"]["mac_atomic_c"] * rep["config"]["mac_atomic_k"]
        check(num(r["peak_macs_per_cycle"]) == peak, f"{what}: peak_macs_per_cycle")
        macs = sum(layer.get("macs", 0) for layer in rep["layers"])
        util = macs / (res["trace_cycles"] * peak) if res["trace_cycles"] else 0
        check(abs(num(r["mac_utilization"]) - util) <= 1e-9 * max(1, util),
              f"{what}: mac_utilization {r['mac_utilization']} != {util}")
        check(num(r["fps"]) is None, f"{what}: a trace has no fps")


def write_json_config(d):
    path = os.path.join(d, "nv_small_2Bpc.json")
    with open(path, "w") as f:
        json.dump({"base": "nv_small", "name": "nv_small_2Bpc", "dram_bytes_per_cycle": 2}, f)
    return path


def check_traces(mpi):
    traces = nv_small_traces()
    d = fresh("traces-mpi" if mpi else "traces")
    config = write_json_config(d)
    out = os.path.join(d, "results.csv")
    started = time.monotonic()
    p = sweep(["--traces", os.path.join(NVDLA, "traces", "nv_small"), "--configs",
               f"nv_small,{config}", "--out", out] + ([] if mpi else ["--jobs", "2"]), mpi)
    print(f"sweep of {len(traces)} traces x 2 configurations: {time.monotonic() - started:.1f} s"
          f"{' (mpirun -np 2)' if mpi else ' (--jobs 2)'}")
    check(p.returncode == 0, f"sweep exit {p.returncode}: {p.stderr}")
    rows = read_rows(out)
    want = [(t, c) for t in traces for c in ("nv_small", config)]  # the plan's order
    check([(r["input"], r["config"]) for r in rows] == want,
          "rows are not every (trace, configuration) pair in the plan's order")
    if mpi:
        ranks = {r["rank"] for r in rows}
        check(ranks == {"0", "1"}, f"ranks that ran simulations: {sorted(ranks)}")
        local = os.path.join(d, "local.csv")
        p = sweep(["--traces", os.path.join(NVDLA, "traces", "nv_small"), "--configs",
                   f"nv_small,{config}", "--out", local, "--jobs", "2"])
        strip = [{k: v for k, v in r.items() if k not in ("host_seconds", "rank")}
                 for r in rows]
        check(strip == [{k: v for k, v in r.items() if k not in ("host_seconds", "rank")}
                        for r in read_rows(local)],
              "the mpirun table differs from the --jobs 2 table beyond host_seconds and rank")
    compare_trace_rows(rows, d)
    # The JSON configuration applied: at half nv_small's DRAM bandwidth some trace is slower.
    by = {(r["input"], r["config"]): num(r["trace_cycles"]) for r in rows}
    check(any(by[(t, config)] and by[(t, "nv_small")] and by[(t, config)] > by[(t, "nv_small")]
              for t in traces), "no trace is slower at 2 B/cycle than on nv_small")
    results = {r["result"] for r in rows}
    check({"pass", "refused"} <= results, f"results seen: {results}")


def check_grid():
    d = fresh("grid")
    out = os.path.join(d, "grid.json")
    p = sweep(["--networks", MODEL, "--configs", "nv_small,nv_small_256", "--grid",
               "dram_bytes_per_cycle=2,4,8", "--grid", "mac_atomic_k=8,16", "--out", out,
               "--jobs", "2"])
    check(p.returncode == 0, f"sweep exit {p.returncode}")
    with open(out) as f:
        table = json.load(f)
    check(table["grid_keys"] == ["dram_bytes_per_cycle", "mac_atomic_k"], "grid_keys")
    rows = table["rows"]
    points = [(c, b, k) for c in ("nv_small", "nv_small_256") for b in ("2", "4", "8")
              for k in ("8", "16")]
    check([(r["config"], r["dram_bytes_per_cycle"], r["mac_atomic_k"]) for r in rows] == points,
          "rows are not the 2 x 3 x 2 grid in order")
    atomic_c = {"nv_small": 8, "nv_small_256": 32}  # configs/nv_small*.json
    for r in rows:
        what = f"{r['config']} dram={r['dram_bytes_per_cycle']} k={r['mac_atomic_k']}"
        check(r["result"] == "pass", f"{what}: {r['result']} {r['message']}")
        check(r["peak_dram_bytes_per_cycle"] == float(r["dram_bytes_per_cycle"]),
              f"{what}: the report's bandwidth {r['peak_dram_bytes_per_cycle']}")
        check(r["peak_macs_per_cycle"] == atomic_c[r["config"]] * int(r["mac_atomic_k"]),
              f"{what}: peak MACs {r['peak_macs_per_cycle']}")
        # 1000 MHz (nv_small's clock_mhz), one image per inference.
        check(abs(r["fps"] * r["trace_cycles"] / 1e9 - 1) < 1e-9,
              f"{what}: fps {r['fps']} x cycles {r['trace_cycles']} != 1e9")
    # More DRAM bandwidth never makes an inference slower; 2 -> 8 B/cycle makes it faster.
    for c in ("nv_small", "nv_small_256"):
        for k in ("8", "16"):
            cycles = [r["trace_cycles"] for r in rows
                      if r["config"] == c and r["mac_atomic_k"] == k]
            check(cycles == sorted(cycles, reverse=True) and cycles[0] > cycles[-1],
                  f"{c} k={k}: cycles over 2, 4, 8 B/cycle {cycles}")
    # One grid point against `octasim net` on the same configuration written by hand.
    cfg = os.path.join(d, "point.json")
    with open(cfg, "w") as f:
        json.dump({"base": "nv_small_256", "dram_bytes_per_cycle": 4, "mac_atomic_k": 16}, f)
    result, _, rep = sequential("network", MODEL, cfg, d, "point")
    row = rows[points.index(("nv_small_256", "4", "16"))]
    check(result == "pass" and rep["network"]["cycles"] == row["trace_cycles"],
          f"nv_small_256 4 B/cycle k=16: sweep {row['trace_cycles']} cycles, octasim net "
          f"{rep and rep['network']['cycles']}")
    # --net-arg reaches every `octasim net`: FP16 is refused on nv_small (no FP16 datapath),
    # runs on nv_full; each row as `octasim net --precision fp16` says.
    out = os.path.join(d, "fp16.csv")
    p = sweep(["--networks", MODEL, "--configs", "nv_small,nv_full", "--net-arg=--precision",
               "--net-arg=fp16", "--out", out])
    for r in read_rows(out):
        result, line, rep = sequential("network", MODEL, r["config"], d, "fp16-" + r["config"],
                                       ("--precision", "fp16"))
        check(r["result"] == result and (r["message"] == line if rep is None else
                                         int(r["trace_cycles"]) == rep["network"]["cycles"]),
              f"fp16 on {r['config']}: sweep {r['result']} {r['message']!r} "
              f"{r['trace_cycles']}, octasim net {result} {line!r}")
    check([r["result"] for r in read_rows(out)] == ["refused", "pass"],
          f"fp16 results {[r['result'] for r in read_rows(out)]}")
    # An NVDLA spec file as the base of a grid point, against a JSON file based on it.
    spec = os.path.join(NVDLA, "spec", "nv_medium_512.spec")
    if os.path.exists(spec):
        out = os.path.join(d, "spec.csv")
        p = sweep(["--networks", MODEL, "--configs", spec, "--grid", "dram_bytes_per_cycle=2",
                   "--out", out])
        cfg = os.path.join(d, "spec_point.json")
        with open(cfg, "w") as f:
            json.dump({"base": os.path.abspath(spec), "dram_bytes_per_cycle": 2}, f)
        result, _, rep = sequential("network", MODEL, cfg, d, "spec")
        row = read_rows(out)[0]
        check(p.returncode == 0 and row["result"] == result == "pass" and
              int(row["trace_cycles"]) == rep["network"]["cycles"],
              f"{spec} at 2 B/cycle: sweep {row['result']} {row['trace_cycles']}, octasim net "
              f"{result} {rep and rep['network']['cycles']}")


def hang_trace(d):
    path = os.path.join(d, "hang.cfg")
    with open(path, "w") as f:
        f.write("// a poll that never ends: S_STATUS never reads 5\n"
                "poll_reg_equal(NVDLA_SDP.S_STATUS_0, 0x5);\n")
    return path


def check_timeout():
    traces = nv_small_traces()
    d = fresh("timeout")
    hang = hang_trace(d)
    out = os.path.join(d, "t.csv")
    started = time.monotonic()
    # 10^13 cycles: the poll would take hours of host time before the player gave up.
    p = sweep(["--traces", hang, traces[0], "--configs", "nv_small", "--out", out,
               "--timeout", "1", "--timeout-cycles", "10000000000000", "--jobs", "2"])
    took = time.monotonic() - started
    check(p.returncode == 0, f"sweep exit {p.returncode}")
    check(took < 30, f"the sweep took {took:.1f} s")
    rows = {os.path.basename(r["input"]): r for r in read_rows(out)}
    check(rows["hang.cfg"]["result"] == "error" and
          rows["hang.cfg"]["message"] == "timed out after 1 s",
          f"hang.cfg: {rows['hang.cfg']['result']} {rows['hang.cfg']['message']!r}")
    check(1 <= num(rows["hang.cfg"]["host_seconds"]) < 10, "hang.cfg's host seconds")
    other = rows[os.path.basename(traces[0])]
    check(other["result"] == "pass", f"{traces[0]}: {other['result']}")
    leftover = run(["pgrep", "-f", hang])
    check(leftover.returncode != 0, f"a child still runs: {leftover.stdout}")

    # A child that crashes (here: sent SIGSEGV while it polls) is an error row, and the sweep
    # completes.
    out = os.path.join(d, "crash.csv")
    p = subprocess.Popen([OCTASIM, "sweep", "--traces", hang, traces[0], "--configs", "nv_small",
                          "--out", out, "--timeout-cycles", "10000000000000", "--jobs", "2"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    pid = None
    for _ in range(200):
        found = run(["pgrep", "-f", f"octasim run {hang}"]).stdout.split()
        if found:
            pid = int(found[0])
            break
        time.sleep(0.05)
    check(pid is not None, "the hanging child never appeared")
    if pid is None:
        p.kill()
        return
    time.sleep(0.3)
    os.kill(pid, signal.SIGSEGV)
    try:
        p.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        p.kill()
        check(False, "the sweep did not finish after its child crashed")
        return
    check(p.returncode == 0, f"sweep exit {p.returncode}")
    rows = {os.path.basename(r["input"]): r for r in read_rows(out)}
    # Under AddressSanitizer (the sanitizer build) the child reports the SEGV itself and exits 1.
    crash = (r"killed by signal 11 \(Segmentation fault\)|"
             r"exit status 1 and no readable report: ERROR: AddressSanitizer: SEGV")
    check(rows["hang.cfg"]["result"] == "error" and
          re.fullmatch(crash + ".*", rows["hang.cfg"]["message"]) is not None,
          f"hang.cfg: {rows['hang.cfg']['result']} {rows['hang.cfg']['message']!r}")
    check(rows[os.path.basename(traces[0])]["result"] == "pass", "the other row")


def check_resume():
    traces = nv_small_traces()[:3]
    d = fresh("resume")
    for ext in ("csv", "json"):
        out = os.path.join(d, f"r.{ext}")
        base = ["--traces"] + traces + ["--out", out]
        check(sweep(base + ["--configs", "nv_small"]).returncode == 0, "first sweep")
        full = read_rows(out)
        # Drop the second row; mark the first so a re-run would show.
        if ext == "csv":
            with open(out, newline="") as f:
                data = list(csv.DictReader(f))
            fields = list(data[0].keys())
            data[0]["host_seconds"] = "999.5"
            del data[1]
            with open(out, "w", newline="") as f:
                w = csv.DictWriter(f, fieldnames=fields, lineterminator="\n")
                w.writeheader()
                w.writerows(data)
        else:
            with open(out) as f:
                table = json.load(f)
            table["rows"][0]["host_seconds"] = 999.5
            del table["rows"][1]
            with open(out, "w") as f:
                json.dump(table, f)
        p = sweep(base + ["--configs", "nv_small", "--resume"])
        check(p.returncode == 0 and "2 of 3 rows already" in p.stdout,
              f"{ext}: resume: {p.stdout[:300]}")
        check(re.search(r"1 simulations in", p.stdout) is not None, f"{ext}: one simulation ran")
        rows = read_rows(out)
        check(num(rows[0]["host_seconds"]) == 999.5, f"{ext}: the kept row was run again")
        strip = lambda rs: [{k: v for k, v in r.items() if k not in ("host_seconds", "rank")}
                            for r in rs]
        check(strip(rows) == strip(full), f"{ext}: the resumed table differs from the first")
        # A second configuration: only its three rows run.
        p = sweep(base + ["--configs", "nv_small,nv_small_256", "--resume"])
        check(p.returncode == 0 and "3 simulations in" in p.stdout,
              f"{ext}: a new configuration: {p.stdout[-300:]}")
        check(len(read_rows(out)) == 6, f"{ext}: six rows")
        # Different grid keys: refused before anything runs, the file untouched.
        before = open(out).read()
        p = sweep(base + ["--configs", "nv_small", "--grid", "mac_atomic_k=8", "--resume"])
        check(p.returncode == 2 and len(p.stderr.strip().splitlines()) == 1 and
              "--resume needs the same --grid keys" in p.stderr, f"{ext}: grid keys: {p.stderr}")
        check(open(out).read() == before, f"{ext}: the output changed")


def trace_bytes(cfg):
    """A trace's .cfg and the files named after it beside it (what the sweep estimates by)."""
    stem = os.path.splitext(os.path.basename(cfg))[0]
    d = os.path.dirname(cfg)
    return sum(os.path.getsize(os.path.join(d, n)) for n in os.listdir(d) if n.startswith(stem))


def started_order(stdout):
    return [m.group(1) for m in re.finditer(r"^\[\d+/\d+\] (\S+) on ", stdout, re.M)]


def check_order():
    traces = nv_small_traces()
    sizes = {}
    for t in traces:
        sizes.setdefault(trace_bytes(t), t)  # one trace per size
    picked = [sizes[b] for b in sorted(sizes)][::max(1, len(sizes) // 5)][:5]
    check(len(picked) == 5, f"five traces of different sizes: {picked}")
    d = fresh("order")
    out = os.path.join(d, "o.csv")
    # --jobs 1: rows finish in the order they started.
    p = sweep(["--traces"] + picked + ["--configs", "nv_small", "--out", out, "--jobs", "1"])
    want = sorted(picked, key=trace_bytes, reverse=True)
    check(started_order(p.stdout) == want, f"order {started_order(p.stdout)}, expected {want}")
    # The previous table's host seconds win over bytes: make the smallest trace the longest.
    with open(out, newline="") as f:
        data = list(csv.DictReader(f))
    seconds = {t: float(k + 1) for k, t in enumerate(want)}  # the largest "took" 1 s
    for r in data:
        r["host_seconds"] = str(seconds[r["input"]])
    with open(out, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(data[0].keys()), lineterminator="\n")
        w.writeheader()
        w.writerows(data)
    p = sweep(["--traces"] + picked + ["--configs", "nv_small", "--out", out, "--jobs", "1"])
    check(started_order(p.stdout) == want[::-1],
          f"order {started_order(p.stdout)}, expected {want[::-1]}")


def check_interrupt():
    traces = nv_small_traces()[:2]
    d = fresh("interrupt")
    hang = hang_trace(d)  # the fewest bytes: it starts last
    out = os.path.join(d, "i.csv")
    args = [OCTASIM, "sweep", "--traces", hang] + traces + [
        "--configs", "nv_small", "--out", out, "--jobs", "1", "--timeout-cycles",
        "10000000000000"]
    p = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    seen = [p.stdout.readline() for _ in range(3)]  # the header and two rows
    check(seen[2].startswith("[2/3]"), f"stdout {seen}")
    time.sleep(0.5)  # the hanging trace has started
    p.send_signal(signal.SIGINT)
    try:
        _, err = p.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        p.kill()
        check(False, "the sweep did not stop on SIGINT")
        return
    check(p.returncode == 1 and "interrupted" in err and "--resume" in err,
          f"exit {p.returncode}: {err!r}")
    rows = read_rows(out)
    check(sorted(r["input"] for r in rows) == sorted(traces), f"rows {rows}")
    check(run(["pgrep", "-f", hang]).returncode != 0, "the hanging child still runs")
    p = sweep(args[2:] + ["--resume", "--timeout", "1"])
    check(p.returncode == 0 and "1 simulations in" in p.stdout, f"resume: {p.stdout}")
    rows = {r["input"]: r for r in read_rows(out)}
    check(len(rows) == 3 and rows[hang]["result"] == "error", f"rows after --resume {rows}")


def expect_error(args, pattern, mpi=False):
    p = sweep(args, mpi)
    lines = p.stderr.strip().splitlines()
    ok = p.returncode == 2 and len(lines) == 1 and re.search(pattern, lines[0] if lines else "")
    check(ok, f"{args}: exit {p.returncode}, stderr {p.stderr!r}, expected /{pattern}/")
    return p


def check_errors():
    traces = nv_small_traces()
    d = fresh("errors")
    out = os.path.join(d, "e.csv")
    base = ["--traces", traces[0], "--out", out]
    expect_error(base + ["--configs", "nv_small", "--grid", "dram_bytez=2,4"],
                 r"^octasim: error: --grid dram_bytez=2,4: unknown configuration key "
                 r"\"dram_bytez\"")
    expect_error(["--traces", os.path.join(d, "missing.cfg"), "--configs", "nv_small", "--out",
                  out], r"^octasim: error: --traces .*missing\.cfg: no such trace file")
    expect_error(["--networks", os.path.join(d, "missing.onnx"), "--configs", "nv_small",
                  "--out", out], r"missing\.onnx: no such model file")
    expect_error(base + ["--configs", "nv_small,nv_tiny"], r"--configs nv_tiny: .*nv_tiny")
    expect_error(base + ["--configs", "nv_small", "--grid", "mac_atomic_k=8,x"],
                 r"--configs nv_small with --grid mac_atomic_k=x: .*mac_atomic_k")
    expect_error(base + ["--configs", "nv_small", "--grid", "mac_atomic_k"],
                 r"--grid mac_atomic_k: expected KEY=V1,V2")
    expect_error(base + ["--configs", "nv_small", "--grid", "mac_atomic_k=8",
                         "--grid", "mac_atomic_k=16"], r"key given twice")
    expect_error(["--traces", traces[0], "--configs", "nv_small", "--out",
                  os.path.join(d, "e.txt")], r"--out .*e\.txt: expected a \.csv or \.json")
    expect_error(["--traces", traces[0], "--configs", "nv_small", "--out",
                  os.path.join(d, "no_dir", "e.csv")], r"no_dir/e\.csv.*: cannot write file")
    expect_error(["--configs", "nv_small", "--out", out], r"nothing to sweep")
    os.makedirs(os.path.join(d, "dir.csv"))
    expect_error(["--traces", traces[0], "--configs", "nv_small", "--out",
                  os.path.join(d, "dir.csv")], r"--out .*dir\.csv: is a directory")
    expect_error(base + ["--configs", "nv_small", "--grid", "mac_atomic_k=8,,16"],
                 r"--grid mac_atomic_k=8,,16: empty value")
    expect_error(base + ["--configs", "nv_small", "--jobs", "0"], r"--jobs: expected at least 1")
    check(not os.path.exists(out), "an output was written")
    # A malformed output with --resume: its file and line.
    with open(out, "w") as f:
        f.write("input,kind\n")
    expect_error(base + ["--configs", "nv_small", "--resume"], r"e\.csv:1: its columns")


def check_errors_mpi():
    traces = nv_small_traces()
    d = fresh("errors-mpi")
    p = sweep(["--traces", traces[0], "--configs", "nv_small", "--grid", "foo=1", "--out",
               os.path.join(d, "e.csv")], mpi=True)
    # mpirun adds its own paragraph about the non-zero exit; octasim's line comes once.
    ours = [line for line in p.stderr.splitlines() if line.startswith("octasim:")]
    check(p.returncode == 2, f"mpirun exit {p.returncode}")
    check(len(ours) == 1 and re.match(r"octasim: error: --grid foo=1: unknown configuration "
                                      r"key \"foo\"", ours[0]) is not None,
          f"octasim's error lines: {ours}")
    # Ranks that see different inputs (here: given different ones, mpirun's A : B form) stop
    # before anything runs.
    out = os.path.join(d, "m.csv")
    common = ["--configs", "nv_small", "--out", out]
    cmd = MPI[:2] + ["-np", "1"] + MPI[4:] + [OCTASIM, "sweep", "--traces", traces[0]] + \
        common + [":", "-np", "1", OCTASIM, "sweep", "--traces", traces[1]] + common
    p = run(cmd, env=MPI_ENV)
    ours = [line for line in p.stderr.splitlines() if line.startswith("octasim:")]
    check(p.returncode == 2 and len(ours) == 1 and
          "error: rank 1: its sweep (1 simulations) differs from rank 0's" in ours[0],
          f"different plans: exit {p.returncode}, {ours}")
    check(not os.path.exists(out), "an output was written")


def check_slurm_example():
    nv_small_traces()
    d = fresh("slurm-example")
    script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples",
                          "sweep_slurm.sh")
    out = os.path.join(d, "r.csv")
    traces = os.path.join(NVDLA, "traces", "nv_small")
    env = dict(MPI_ENV, OCTASIM=OCTASIM, TRACES=traces, CONFIGS="nv_small",
               GRID="dram_bytes_per_cycle=2,4", OUT=out,
               MPIRUN_ARGS=" ".join(MPI[1:]))
    p = run(["bash", script], env=env)
    check(p.returncode == 0, f"{script}: exit {p.returncode}: {p.stderr[-2000:]}")
    rows = read_rows(out)
    check({r["rank"] for r in rows} == {"0", "1"}, "both ranks ran simulations")
    local = os.path.join(d, "local.csv")
    p = sweep(["--traces", traces, "--configs", "nv_small", "--grid", "dram_bytes_per_cycle=2,4",
               "--out", local, "--jobs", "2"])
    strip = lambda rs: [{k: v for k, v in r.items() if k not in ("host_seconds", "rank")}
                        for r in rs]
    check(len(rows) == 2 * len(nv_small_traces()) and strip(rows) == strip(read_rows(local)),
          "the script's table differs from a --jobs 2 sweep's")


def check_no_mpi():
    traces = nv_small_traces()
    d = fresh("no-mpi")
    env = dict(os.environ, OMPI_COMM_WORLD_SIZE="2")
    p = run([OCTASIM, "sweep", "--traces", traces[0], "--configs", "nv_small", "--out",
             os.path.join(d, "e.csv")], env=env)
    lines = p.stderr.strip().splitlines()
    check(p.returncode == 2 and len(lines) == 1 and "built with MPI" in lines[0],
          f"exit {p.returncode}: {p.stderr!r}")


CHECKS = {"traces": lambda: check_traces(False), "traces-mpi": lambda: check_traces(True),
          "grid": check_grid, "timeout": check_timeout, "resume": check_resume,
          "errors": check_errors, "order": check_order, "interrupt": check_interrupt, "errors-mpi": check_errors_mpi,
          "slurm-example": check_slurm_example, "no-mpi": check_no_mpi}

if __name__ == "__main__":
    os.makedirs(WORK, exist_ok=True)
    CHECKS[CHECK]()
    if failures:
        print(f"{len(failures)} failure(s)")
        sys.exit(1)
    print("ok")
