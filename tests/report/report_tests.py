#!/usr/bin/env python3
"""Tests of what `octasim run` reports (registered by tests/cli/CMakeLists.txt).

report_tests.py CHECK OCTASIM WORKDIR [SCHEMA]
  schema  the demo's --report validates against sim/report/report.schema.json, and
          `octasim report` prints the run's checks/cycles lines again
  perf    the demo trace with every D_PERF_ENABLE set and its perf registers read back
          (reg_read) after each layer: each value equals the report's counter for that layer
  diff    the demo on nv_small and on a JSON config with half the DRAM bandwidth; `octasim
          report A B` compares them
  timeline  --timeline is Chrome-trace JSON whose busy slices per unit add up to the report's
          busy cycles
Exit 77 (skipped) when python3's jsonschema module is needed and absent.
"""
import json
import os
import re
import subprocess
import sys


def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)


def run(cmd, expect=0):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if p.returncode != expect:
        fail(f"{' '.join(cmd)}: exit {p.returncode}, expected {expect}\n{p.stdout}\n{p.stderr}")
    return p.stdout


def demo(octasim, work, extra=()):
    out = os.path.join(work, "demo")
    report = os.path.join(work, "demo.json")
    stdout = run([octasim, "demo", "--out", out, "--report", report, *extra])
    return out, report, stdout


def last_lines(stdout):
    lines = [l for l in stdout.splitlines() if l.startswith(("checks:", "cycles:"))]
    return lines[-2:]


def check_schema(octasim, work, schema_path):
    try:
        import jsonschema
    except ImportError:
        print("SKIP: python3 module jsonschema not installed (Debian: python3-jsonschema)")
        sys.exit(77)
    _, report, stdout = demo(octasim, work)
    with open(schema_path) as f:
        schema = json.load(f)
    with open(report) as f:
        data = json.load(f)
    jsonschema.Draft202012Validator.check_schema(schema)
    errors = sorted(jsonschema.Draft202012Validator(schema).iter_errors(data), key=str)
    if errors:
        fail(f"{report} does not follow the schema: {errors[0]}")
    # The schema rejects what it should: a report of another version, a bad bound.
    for bad in ({**data, "schema_version": 2},
                {**data, "layers": [{**data["layers"][0], "roofline": {
                    **data["layers"][0]["roofline"], "bound": "both"}}]}):
        if jsonschema.Draft202012Validator(schema).is_valid(bad):
            fail("the schema accepts an invalid report")
    want_layers = ["CONV", "PDP", "CDP", "OCTAV", "SDP", "SDP"]
    if [l["engine"] for l in data["layers"]] != want_layers:
        fail(f"layers {[l['engine'] for l in data['layers']]}, expected {want_layers}")
    # The demo's PDP reads its 16x16x16 INT8 input (4096 B) and writes 8x8x16 (1024 B); the
    # datapath takes one element per cycle (nv_small pdp_throughput 1): 4096 busy cycles.
    pdp = data["layers"][1]
    if (pdp["bytes_read"], pdp["bytes_written"]) != (4096, 1024):
        fail(f"PDP bytes {pdp['bytes_read']}/{pdp['bytes_written']}, expected 4096/1024")
    core = next(u for u in pdp["units"] if u["name"] == "core")
    if core["busy_cycles"] != 4096:
        fail(f"PDP core busy {core['busy_cycles']}, expected 4096")
    # CONV: 16x16 outputs x 16 kernels x 3x3x8 = 294912 MACs; 2 ops per MAC; peak 2*8*8 ops
    # per cycle over 4 B/cycle: ridge 32 ops/B.
    conv = data["layers"][0]["roofline"]
    if conv["ops"] != 2 * 294912 or conv["ridge_point"] != 32:
        fail(f"CONV roofline ops {conv['ops']} ridge {conv['ridge_point']}")
    printed = run([octasim, "report", report])
    if last_lines(printed) != last_lines(stdout):
        fail(f"octasim report prints {last_lines(printed)}, the run printed {last_lines(stdout)}")


PERF_ENABLES = {
    # the OP_ENABLE write before which the D_PERF_ENABLE writes go, and the writes
    "NVDLA_SDP_RDMA.D_OP_ENABLE_0": ["NVDLA_CDMA.D_PERF_ENABLE_0, 0x1",
                                     "NVDLA_SDP.D_PERF_ENABLE_0, 0x5"],
    "NVDLA_PDP_RDMA.D_OP_ENABLE_0": ["NVDLA_PDP_RDMA.D_PERF_ENABLE_0, 0x1",
                                     "NVDLA_PDP.D_PERF_ENABLE_0, 0x1"],
    "NVDLA_CDP_RDMA.D_OP_ENABLE_0": ["NVDLA_CDP_RDMA.D_PERF_ENABLE_0, 0x1",
                                     "NVDLA_CDP.D_PERF_ENABLE_0, 0x3"],
}
PERF_READS = {
    "SDP_0": ("CONV", ["NVDLA_CDMA.D_PERF_DAT_READ_STALL_0", "NVDLA_CDMA.D_PERF_WT_READ_STALL_0",
                       "NVDLA_CDMA.D_PERF_DAT_READ_LATENCY_0",
                       "NVDLA_CDMA.D_PERF_WT_READ_LATENCY_0",
                       "NVDLA_SDP.D_PERF_WDMA_WRITE_STALL_0"]),
    "PDP_0": ("PDP", ["NVDLA_PDP_RDMA.D_PERF_READ_STALL_0", "NVDLA_PDP.D_PERF_WRITE_STALL_0"]),
    "CDP_0": ("CDP", ["NVDLA_CDP_RDMA.D_PERF_READ_STALL_0", "NVDLA_CDP.D_PERF_WRITE_STALL_0"]),
}


def check_perf(octasim, work):
    out, _, _ = demo(octasim, work)
    lines = open(os.path.join(out, "demo.cfg")).read().splitlines()
    cfg, read_engine = [], {}
    # Only the first layer of each engine (the demo's CONV, PDP, CDP; its later SDP layers
    # run after OCTAV) gets the perf enables and reads.
    enabled, read = set(), set()
    for line in lines:
        for op_enable, writes in PERF_ENABLES.items():
            if line.startswith(f"reg_write({op_enable}") and op_enable not in enabled:
                enabled.add(op_enable)
                cfg += [f"reg_write({w});" for w in writes]
        if re.match(r"reg_write\(NVDLA_(SDP|CDMA)\.D_PERF_ENABLE_0", line):
            continue  # replaced above (DMA_EN added to the demo's SAT_EN)
        if re.match(r"reg_write\(NVDLA_CDP\.D_PERF_ENABLE_0", line):
            continue
        cfg.append(line)
        m = re.match(r"intr_notify\((\w+),", line)
        if m and m.group(1) in PERF_READS and m.group(1) not in read:
            read.add(m.group(1))
            engine, regs = PERF_READS[m.group(1)]
            for r in regs:
                cfg.append(f"reg_read({r}, perf);")
                read_engine[len(cfg)] = (engine, r)
    trace = os.path.join(out, "perf.cfg")
    with open(trace, "w") as f:
        f.write("\n".join(cfg) + "\n")
    report = os.path.join(work, "perf.json")
    stdout = run([octasim, "run", trace, "--report", report])
    data = json.load(open(report))
    counter_of = {}  # (engine, register) -> counter name
    for s in data["statistics"]:
        if "register" in s:
            engine = s["name"].split(".")[1]
            counter_of[(engine, s["register"])] = s["name"]
    compared = nonzero = 0
    for m in re.finditer(r"^READ line (\d+): (\S+) = 0x([0-9a-f]+)$", stdout, re.M):
        line, reg, value = int(m.group(1)), m.group(2), int(m.group(3), 16)
        engine, want_reg = read_engine[line]
        if reg != want_reg:
            fail(f"line {line} read {reg}, expected {want_reg}")
        layer = next(l for l in data["layers"] if l["engine"] == engine)
        counter = counter_of.get((engine, reg))
        if counter is None:
            fail(f"no statistics counter of {engine} feeds {reg}")
        if layer["counters"][counter] != value:
            fail(f"{reg} reads {value}, the report's {counter} for the {engine} layer is "
                 f"{layer['counters'][counter]}")
        listed = [r["value"] for r in layer["registers"] if r["name"] == reg]
        if listed != [value]:
            fail(f"{reg} reads {value}, the report's {engine} registers list {listed}")
        compared += 1
        nonzero += value != 0
    want = sum(len(r) for _, r in PERF_READS.values())
    if compared != want:
        fail(f"compared {compared} register reads, expected {want}")
    if nonzero < 3:
        fail(f"only {nonzero} perf registers were non-zero: the test would not notice a mix-up")
    print(f"{compared} perf registers equal their report counters ({nonzero} non-zero)")


def check_diff(octasim, work):
    out, a, _ = demo(octasim, work)
    config = os.path.join(work, "half_dram.json")
    with open(config, "w") as f:
        json.dump({"base": "nv_small", "name": "nv_small_2Bpc", "dram_bytes_per_cycle": 2}, f)
    b = os.path.join(work, "half.json")
    run([octasim, "run", os.path.join(out, "demo.cfg"), "--config", config, "--report", b])
    text = run([octasim, "report", a, b])
    ra, rb = json.load(open(a)), json.load(open(b))
    if rb["config"]["dram_bytes_per_cycle"] != 2:
        fail("the JSON config did not set the DRAM bandwidth")
    ta, tb = ra["result"]["trace_cycles"], rb["result"]["trace_cycles"]
    row = re.search(r"^  trace cycles +(\d+) +(\d+) +([+-]\d+) +([+-][0-9.]+)%$", text, re.M)
    if not row or (int(row.group(1)), int(row.group(2)), int(row.group(3))) != (ta, tb, tb - ta):
        fail(f"no 'trace cycles {ta} {tb} {tb - ta:+d}' row in:\n{text}")
    if tb <= ta:
        fail(f"half the DRAM bandwidth ran in {tb} cycles, full bandwidth in {ta}")
    for engine in ("CONV", "PDP", "CDP"):
        if not re.search(rf"^layer \d+: {engine} group 0$", text, re.M):
            fail(f"no {engine} layer in the comparison:\n{text}")


def main():
    check, octasim, work = sys.argv[1], sys.argv[2], sys.argv[3]
    os.makedirs(work, exist_ok=True)
    if check == "schema":
        check_schema(octasim, work, sys.argv[4])
    elif check == "perf":
        check_perf(octasim, work)
    elif check == "diff":
        check_diff(octasim, work)
    elif check == "vcd":
        check_vcd(octasim, work)
    elif check == "timeline":
        check_timeline(octasim, work)
    else:
        fail(f"unknown check {check}")


def check_vcd(octasim, work):
    out, report, _ = demo(octasim, work)
    vcd = os.path.join(work, "demo.vcd")
    run([octasim, "run", os.path.join(out, "demo.cfg"), "--vcd", vcd])
    ids, scope, changes, time = {}, [], {}, 0
    for line in open(vcd):
        words = line.split()
        if not words:
            continue
        if words[0] == "$scope":
            scope.append(words[2])
        elif words[0] == "$upscope":
            scope.pop()
        elif words[0] == "$var":
            ids[words[3]] = ".".join(scope[1:] + [words[4]])
        elif words[0].startswith("#"):
            time = int(words[0][1:])
        elif words[0][0] in "01" and words[0][1:] in ids:
            changes.setdefault(ids[words[0][1:]], []).append((time, int(words[0][0])))
        elif words[0][0] == "b" and len(words) == 2 and words[1] in ids:
            changes.setdefault(ids[words[1]], []).append((time, int(words[0][1:], 2)))
    data = json.load(open(report))
    runs = {}  # engine -> its layers' (start, 1), (end, 0) edges, in order
    for layer in data["layers"]:
        runs.setdefault(layer["engine"], []).extend(
            [(layer["start_cycle"], 1), (layer["end_cycle"], 0)])
    for engine, want in runs.items():
        busy = [c for c in changes.get(f"{engine}.busy", []) if c[0] > 0]
        if busy != want:
            fail(f"{engine}.busy changes {busy}, the report's layer runs {want}")
    credits = changes.get("CONV.cacc_credits", [])
    # nv_small: 2 x atomic-K = 16 credits, taken by the CSC and returned by the CACC.
    if not credits or max(v for _, v in credits) != 16 or min(v for _, v in credits) >= 16:
        fail(f"CONV.cacc_credits does not move within 0..16: {credits[:5]}")
    dram = changes.get("dram.bytes", [])
    total = data["dram"]["bytes_read"] + data["dram"]["bytes_written"]
    if not dram or dram[-1][1] != total:
        fail(f"dram.bytes ends at {dram[-1:]} , the report moved {total} bytes")
    print(f"VCD: engine busy edges match the layers; {len(credits)} credit changes")


TRACK_OF_UNIT = {"CDMA_DAT": "CDMA data DMA", "CDMA_WT": "CDMA weight DMA", "CSC": "CSC",
                 "CACC": "CACC delivery", "RDMA": "RDMA", "core": "core", "WDMA": "WDMA",
                 "DMA": "DMA", "datapath": "datapath", "divider": "divider"}


def timeline_tracks(path):
    """Checks the Chrome-trace structure; returns {(process, thread): [(ts, dur)]} and the
    counter names per process."""
    doc = json.load(open(path))
    events = doc.get("traceEvents")
    if not isinstance(events, list) or not events:
        fail(f"{path}: no traceEvents list")
    process, thread = {}, {}
    for e in events:
        if e.get("ph") == "M" and e.get("name") == "process_name":
            process[e["pid"]] = e["args"]["name"]
        if e.get("ph") == "M" and e.get("name") == "thread_name":
            thread[(e["pid"], e["tid"])] = e["args"]["name"]
    slices, counters = {}, {}
    for e in events:
        ph = e.get("ph")
        if ph not in ("X", "M", "C"):
            fail(f"{path}: event phase {ph!r}")
        if ph == "X":
            for k in ("name", "ts", "dur", "pid", "tid"):
                if k not in e:
                    fail(f"{path}: X event without {k}: {e}")
            if not (isinstance(e["ts"], int) and isinstance(e["dur"], int) and e["dur"] > 0):
                fail(f"{path}: X event with a bad ts/dur: {e}")
            key = (process[e["pid"]], thread[(e["pid"], e["tid"])])
            slices.setdefault(key, []).append((e["ts"], e["dur"]))
        if ph == "C":
            if not isinstance(e.get("args", {}).get("value"), (int, float)):
                fail(f"{path}: C event without a numeric value: {e}")
            counters.setdefault(process[e["pid"]], set()).add(e["name"])
    for key, ss in slices.items():
        ss.sort()
        for (a, da), (b, _) in zip(ss, ss[1:]):
            if a + da > b:
                fail(f"{path}: slices overlap on {key}: {a}+{da} > {b}")
    return slices, counters


def check_timeline(octasim, work):
    _, report, _ = demo(octasim, work)
    data = json.load(open(report))
    busy = {}
    for layer in data["layers"]:
        key = (layer["engine"], "layers")
        busy[key] = busy.get(key, 0) + layer["cycles"]
        for u in layer["units"]:
            key = (layer["engine"], TRACK_OF_UNIT[u["name"]])
            busy[key] = busy.get(key, 0) + u["busy_cycles"]
    busy[("DRAM", "data bus")] = data["dram"]["busy_cycles"]
    trace = os.path.join(work, "demo", "demo.cfg")
    counts = {}
    for detail in ("layer", "tile", "dma"):
        path = os.path.join(work, f"timeline_{detail}.json")
        run([octasim, "run", trace, "--timeline", path, "--timeline-detail", detail])
        slices, counters = timeline_tracks(path)
        if "DRAM bandwidth (B/cycle)" not in counters.get("DRAM", set()):
            fail(f"{path}: no DRAM bandwidth counter")
        if detail == "layer":
            if set(slices) != {k for k in busy if k[1] == "layers"}:
                fail(f"{path}: layer detail has tracks {sorted(slices)}")
        else:
            if "CACC credits" not in counters.get("CONV", set()):
                fail(f"{path}: no CACC credits counter")
            if set(slices) != set(busy):
                fail(f"{path}: tracks {sorted(slices)}, expected {sorted(busy)}")
        for key, ss in slices.items():
            total = sum(d for _, d in ss)
            if total != busy[key]:
                fail(f"{path}: {key} slices add up to {total}, the report says {busy[key]}")
        counts[detail] = {k: len(v) for k, v in slices.items()}
    # Per burst there are more slices than per tile where bursts touch (CDMA data reads).
    key = ("CONV", "CDMA data DMA")
    if not counts["dma"][key] > counts["tile"][key]:
        fail(f"{key}: {counts['dma'][key]} slices at dma detail, {counts['tile'][key]} at tile")
    print("timeline busy time per track equals the report:",
          ", ".join(f"{p}/{t} {busy[(p, t)]}" for p, t in sorted(busy)))


if __name__ == "__main__":
    main()
