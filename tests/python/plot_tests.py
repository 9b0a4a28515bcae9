#!/usr/bin/python3
"""Tests of octasim.plot (python/octasim/plot.py), registered by tests/python/plot_tests.cmake.

plot_tests.py CHECK OCTASIM WORKDIR [NVDLA_DIR]
  trace    an NVDLA trace (dc_6x8x192_3x3x192x32_int8_0) run with --report, then
           `python3 -m octasim.plot` for roofline, bounds and utilization: each SVG is XML with
           one element per layer / unit, its axis labels, and geometry matching the report
  net      the same for `octasim net` on lenet5 (7 hardware layers, 5 with MACs), and the
           bounds per network layer (--level network)
  demo     the built-in demo (CONV, PDP, CDP, OCTAV, SDP, SDP): the roofline in ops has a point
           per layer, the stacked bars and unit bars match the report's counters
  compare  the trace on nv_small and at half its DRAM bandwidth: paired bars, B slower
  errors   a missing, malformed or foreign report, an unknown kind, a wrong report count, an
           unknown output format: exit 2 and one error line naming the file; no figure written
Needs PYTHONPATH to hold build/python. Exit 77 (skipped) without NumPy or matplotlib, or (trace,
compare) without NVDLA's traces.
"""
import json
import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET

SVG = "{http://www.w3.org/2000/svg}"
TRACE = "dc_6x8x192_3x3x192x32_int8_0"


def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)


def skip(msg):
    print("SKIP:", msg)
    sys.exit(77)


def run(cmd, expect=0):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if p.returncode != expect:
        fail(f"{' '.join(cmd)}: exit {p.returncode}, expected {expect}\n{p.stdout}\n{p.stderr}")
    return p


def plot(args, expect=0):
    return run([sys.executable, "-m", "octasim.plot", *args], expect)


def load(path):
    with open(path) as f:
        return json.load(f)


class Svg:
    """An SVG figure: parsing it is the well-formedness check."""

    def __init__(self, path):
        try:
            self.root = ET.parse(path).getroot()
        except ET.ParseError as e:
            fail(f"{path}: not well-formed XML: {e}")
        if self.root.tag != SVG + "svg":
            fail(f"{path}: root element {self.root.tag}, expected svg")
        self.path = path
        self.by_id = {}
        for e in self.root.iter():
            if e.get("id") is not None:
                if e.get("id") in self.by_id:
                    fail(f"{path}: id {e.get('id')} twice")
                self.by_id[e.get("id")] = e
        self.texts = ["".join(e.itertext()) for e in self.root.iter(SVG + "text")]

    def ids(self, pattern):
        return sorted(i for i in self.by_id if re.fullmatch(pattern, i))

    def box(self, gid):
        """(x0, y0, x1, y1) of the path drawn in element `gid` (a bar's rectangle)."""
        paths = list(self.by_id[gid].iter(SVG + "path"))
        if len(paths) != 1:
            fail(f"{self.path}: {gid} has {len(paths)} paths, expected 1")
        nums = [float(v) for v in re.findall(r"-?\d+(?:\.\d+)?(?:e-?\d+)?", paths[0].get("d"))]
        xs, ys = nums[0::2], nums[1::2]
        return min(xs), min(ys), max(xs), max(ys)

    def need_text(self, *texts):
        for t in texts:
            if t not in self.texts:
                fail(f"{self.path}: no text '{t}' (texts: {self.texts})")


def close(a, b, rel=1e-3, what=""):
    if abs(a - b) > rel * max(abs(a), abs(b), 1e-12):
        fail(f"{what}: {a} != {b}")


# ---------------------------------------------------------------------------------------------


def check_roofline(report_path, work, metric="macs"):
    """The SVG has a point per layer that has work and DRAM traffic, the roofs and axis labels;
    the drawn data (through the functions) equals what the report's raw fields give."""
    report = load(report_path)
    out = os.path.join(work, f"roofline_{metric}.svg")
    plot([report_path, "--kind", "roofline", "--metric", metric, "--out", out])
    svg = Svg(out)
    unit = "MACs" if metric == "macs" else "ops"
    # What should have a point, from the report's fields.
    want = {}
    for layer in report["layers"]:
        work_ = layer.get("macs", 0) if metric == "macs" else layer["roofline"]["ops"]
        moved = layer["bytes_read"] + layer["bytes_written"]
        if work_ > 0 and moved > 0 and layer["cycles"] > 0:
            want[layer["index"]] = (work_ / moved, work_ / layer["cycles"])
    if not want:
        fail(f"{report_path}: no layer to plot: a useless test")
    got = svg.ids(r"layer-\d+")
    if got != sorted(f"layer-{i}" for i in want):
        fail(f"{out}: points {got}, expected one per layer {sorted(want)}")
    if not svg.ids("roof-bandwidth") or not svg.ids(r"roof-compute-\d+"):
        fail(f"{out}: roofs missing: {sorted(svg.by_id)}")
    svg.need_text(f"arithmetic intensity ({unit} per DRAM byte)", f"achieved {unit} per cycle")
    # The drawn data.
    import matplotlib
    matplotlib.use("Agg")
    import octasim.plot as op
    ax = op.roofline(report_path, metric=metric)
    lines = {l.get_gid(): l for l in ax.get_lines()}
    bw = report["dram"]["peak_bytes_per_cycle"]
    cfg = report["config"]
    for i, (x, y) in want.items():
        line = lines[f"layer-{i}"]
        close(float(line.get_xdata()[0]), x, 1e-9, f"layer {i} intensity")
        close(float(line.get_ydata()[0]), y, 1e-9, f"layer {i} achieved")
        # No layer beats its roofs: the DRAM cannot deliver more than its peak, the MAC array
        # not more than atomic-C x atomic-K per cycle (2 ops per MAC).
        layer = report["layers"][[l["index"] for l in report["layers"]].index(i)]
        peak = (cfg["mac_atomic_c"] * cfg["mac_atomic_k"] if metric == "macs" else
                layer["roofline"]["peak_ops_per_cycle"])
        if y > min(peak, bw * x) * (1 + 1e-9):
            fail(f"layer {i}: {y} {unit}/cycle above the roofline min({peak}, {bw} x {x})")
    compute = [l for g, l in lines.items() if g.startswith("roof-compute-")]
    peaks = sorted({float(l.get_ydata()[0]) for l in compute})
    if metric == "macs":
        want_peaks = {float(cfg["mac_atomic_c"] * cfg["mac_atomic_k"])}
        want_peaks |= {float(l["mac_utilization"]["peak_macs_per_cycle"])
                       for l in report["layers"] if "mac_utilization" in l}
    else:
        want_peaks = {float(l["roofline"]["peak_ops_per_cycle"]) for l in report["layers"]}
    if peaks != sorted(want_peaks):
        fail(f"compute roofs at {peaks}, expected {sorted(want_peaks)}")
    roof = lines["roof-bandwidth"]
    xs, ys = roof.get_xdata(), roof.get_ydata()
    close(float(ys[0] / xs[0]), bw, 1e-9, "bandwidth roof slope")
    close(float(max(ys)), max(want_peaks), 1e-9, "bandwidth roof meets the compute roof")
    import matplotlib.pyplot as plt
    plt.close("all")
    return len(want)


def check_bounds(report_path, work):
    """A bar of four segments per layer; each bar's height in the SVG is proportional to the
    layer's cycles, its busy segment to the engine's busy counter, stalls to the report's."""
    report = load(report_path)
    layers = report["layers"]
    out = os.path.join(work, "bounds.svg")
    plot([report_path, "--kind", "bounds", "--out", out])
    svg = Svg(out)
    for seg in ("busy", "read-stall", "write-stall", "other"):
        got = svg.ids(seg + r"-\d+")
        if got != sorted(f"{seg}-{k}" for k in range(len(layers))):
            fail(f"{out}: {seg} bars {got}, expected {len(layers)}")
    svg.need_text("cycles", "layer")
    scale = None
    for k, layer in enumerate(layers):
        busy = layer["counters"][f"dla.{layer['engine']}.busy_cycles"]
        parts = {"busy": busy, "read-stall": layer["read_stall_cycles"],
                 "write-stall": layer["write_stall_cycles"]}
        # The datapath is busy, stalled for input, stalled for output or neither in a cycle.
        if sum(parts.values()) > layer["cycles"]:
            fail(f"layer {k}: busy + stalls {sum(parts.values())} > cycles {layer['cycles']}")
        boxes = {seg: svg.box(f"{seg}-{k}") for seg in ("busy", "read-stall", "write-stall",
                                                         "other")}
        top = min(b[1] for b in boxes.values())
        bottom = max(b[3] for b in boxes.values())
        if scale is None:
            scale = (bottom - top) / layer["cycles"]
        close(bottom - top, scale * layer["cycles"], 2e-3, f"layer {k} bar height")
        for seg, cycles in parts.items():
            b = boxes[seg]
            if abs((b[3] - b[1]) - scale * cycles) > 0.01 + 2e-3 * scale * cycles:
                fail(f"layer {k} {seg}: {b[3] - b[1]} px for {cycles} cycles at {scale} px/cycle")
    return len(layers)


def check_utilization(report_path, work):
    """A bar per engine unit the layers used plus the DRAM; widths proportional to busy cycles
    summed over the layers (the DRAM: its bus busy cycles)."""
    report = load(report_path)
    busy = {}
    for layer in report["layers"]:
        for u in layer["units"]:
            name = f"{layer['engine']}.{u['name']}"
            busy[name] = busy.get(name, 0) + u["busy_cycles"]
    busy["DRAM"] = report["dram"]["busy_cycles"]
    if "cvsram" in report:
        busy["CV-SRAM"] = report["cvsram"]["busy_cycles"]
    out = os.path.join(work, "utilization.svg")
    plot([report_path, "--kind", "utilization", "--out", out])
    svg = Svg(out)
    got = svg.ids(r"unit-.+")
    if got != sorted(f"unit-{n}" for n in busy):
        fail(f"{out}: unit bars {got}, expected {sorted(busy)}")
    svg.need_text("unit", "utilization (% busy cycles of the trace's cycles)")
    # The DRAM's bar, as the report's own utilization; every other bar in proportion.
    svg.need_text(f"{100 * report['dram']['utilization']:.1f}%")
    dram = svg.box("unit-DRAM")
    per_cycle = (dram[2] - dram[0]) / busy["DRAM"]
    for name, cycles in busy.items():
        b = svg.box(f"unit-{name}")
        if abs((b[2] - b[0]) - per_cycle * cycles) > 0.01 + 2e-3 * per_cycle * cycles:
            fail(f"{name}: bar {b[2] - b[0]} px for {cycles} busy cycles "
                 f"({per_cycle} px/cycle from the DRAM)")
    return len(busy)


# ---------------------------------------------------------------------------------------------


def trace_report(octasim, work, nvdla, name, extra=()):
    cfg = os.path.join(nvdla, "traces", "nv_small", TRACE, TRACE + ".cfg")
    if not os.path.exists(cfg):
        skip(f"{cfg} not found; NVDLA traces absent")
    report = os.path.join(work, name)
    run([octasim, "run", cfg, "--report", report, *extra])
    return report


def check_trace(octasim, work, nvdla):
    report = trace_report(octasim, work, nvdla, "trace.json")
    layers = load(report)["layers"]
    if [l["engine"] for l in layers] != ["CONV"]:
        fail(f"{TRACE}: layers {[l['engine'] for l in layers]}, expected one CONV")
    print("roofline points", check_roofline(report, work))
    print("bound bars", check_bounds(report, work))
    print("unit bars", check_utilization(report, work))


def check_net(octasim, work):
    model = os.path.join(work, "lenet5.onnx")
    run([octasim, "zoo", "lenet5", "--out", model])
    report = os.path.join(work, "lenet5.json")
    run([octasim, "net", model, "--report", report, "--no-progress"])
    layers = load(report)["layers"]
    n = check_roofline(report, work)
    # lenet5: conv1, conv2, fc1, fc2, fc3 are CONV layers (the pools PDP, without MACs).
    if n != 5:
        fail(f"lenet5: {n} roofline points, expected 5 (conv1, conv2, fc1..fc3)")
    if check_bounds(report, work) != len(layers):
        fail("bounds: a bar per layer")
    svg = Svg(os.path.join(work, "bounds.svg"))
    svg.need_text("conv1", "conv2", "fc1", "fc2", "fc3")  # tick labels name the ONNX nodes
    check_utilization(report, work)
    # Per network layer: a bar of its cycles, the bound's share of them, the bound named.
    net = load(report)["network"]["layers"]
    if len(net) != 5:
        fail(f"lenet5: {len(net)} network layers, expected 5")
    out = os.path.join(work, "network.svg")
    plot([report, "--kind", "bounds", "--level", "network", "--out", out])
    svg = Svg(out)
    if svg.ids(r"bound-\d+") != [f"bound-{k}" for k in range(5)] or \
            svg.ids(r"rest-\d+") != [f"rest-{k}" for k in range(5)]:
        fail(f"{out}: bars {svg.ids(r'(bound|rest)-.*')}, expected 2 x 5")
    svg.need_text("network layer", "cycles")
    scale = None
    for k, layer in enumerate(net):
        b, r = svg.box(f"bound-{k}"), svg.box(f"rest-{k}")
        height = max(b[3], r[3]) - min(b[1], r[1])
        if scale is None:
            scale = height / layer["cycles"]
        close(height, scale * layer["cycles"], 2e-3, f"network layer {k} bar")
        part = min(layer["bound_share"], 1.0) * layer["cycles"]
        if abs((b[3] - b[1]) - scale * part) > 0.01 + 2e-3 * scale * part:
            fail(f"network layer {k}: bound bar {b[3] - b[1]} px for {part} cycles")
        svg.need_text(f"{layer['bound']} {100 * layer['bound_share']:.0f}%")
    print(f"lenet5: {len(layers)} layers, {n} with MACs, {len(net)} network layers")


def check_demo(octasim, work):
    report = os.path.join(work, "demo.json")
    run([octasim, "demo", "--out", os.path.join(work, "demo"), "--report", report])
    layers = load(report)["layers"]
    if check_roofline(report, work, "ops") != len(layers):
        fail("the demo's roofline in ops: a point per layer")
    check_roofline(report, work, "macs")
    check_bounds(report, work)
    if check_utilization(report, work) != 17:  # 4 CONV + 3 x (PDP, CDP, SDP) + 3 OCTAV + DRAM
        fail("demo: expected 17 unit bars")


def check_compare(octasim, work, nvdla):
    half = os.path.join(work, "half.json")
    with open(half, "w") as f:
        json.dump({"base": "nv_small", "name": "nv_small_2Bpc", "dram_bytes_per_cycle": 2}, f)
    a = trace_report(octasim, work, nvdla, "a.json")
    b = trace_report(octasim, work, nvdla, "b.json", ("--config", half))
    ra, rb = load(a), load(b)
    out = os.path.join(work, "compare.svg")
    plot([a, b, "--out", out])  # two reports: compare is the default kind
    svg = Svg(out)
    n = len(ra["layers"])
    if svg.ids(r"a-\d+") != [f"a-{k}" for k in range(n)] or \
            svg.ids(r"b-\d+") != [f"b-{k}" for k in range(n)]:
        fail(f"{out}: bars {svg.ids(r'[ab]-.*')}, expected a pair per layer ({n})")
    svg.need_text("cycles", "layer")
    ca, cb = ra["layers"][0]["cycles"], rb["layers"][0]["cycles"]
    # The layer is DRAM-bound (weights at ~90% of 4 B/cycle): half the bandwidth is slower.
    if not cb > ca:
        fail(f"half the DRAM bandwidth: {cb} cycles, not more than {ca}")
    ba, bb = svg.box("a-0"), svg.box("b-0")
    close((bb[3] - bb[1]) / (ba[3] - ba[1]), cb / ca, 2e-3, "bar heights B/A")
    svg.need_text(f"x{cb / ca:.2f}")
    # Explicit --kind compare, and a report against itself: equal bars.
    out2 = os.path.join(work, "self.svg")
    plot([a, a, "--kind", "compare", "--out", out2])
    s2 = Svg(out2)
    close(s2.box("a-0")[1], s2.box("b-0")[1], 1e-9, "a report against itself: bar tops")
    s2.need_text("x1.00")


def check_errors(octasim, work):
    good = os.path.join(work, "demo.json")
    run([octasim, "demo", "--out", os.path.join(work, "demo"), "--report", good])
    out = os.path.join(work, "never.svg")

    def bad(args, pattern):
        p = plot([*args, "--out", out] if "--out" not in args else args, expect=2)
        lines = p.stderr.strip().splitlines()
        if not lines or not re.search(pattern, lines[-1]):
            fail(f"{args}: stderr {p.stderr!r}, expected /{pattern}/")
        if os.path.exists(out):
            fail(f"{args}: a figure was written after an error")

    def write(name, text):
        path = os.path.join(work, name)
        with open(path, "w") as f:
            f.write(text)
        return path

    missing = os.path.join(work, "no_such.json")
    bad([missing], re.escape(missing) + r": cannot open file")
    trunc = write("truncated.json", '{"schema_version": 1,\n  "layers": [\n')
    bad([trunc], re.escape(trunc) + r":3:1: not a JSON document")
    bad([write("array.json", "[1, 2]")], r"array\.json: expected a JSON object")
    data = load(good)
    bad([write("v2.json", json.dumps({**data, "schema_version": 2}))],
        r"v2\.json: expected \"schema_version\": 1")
    layers = [dict(l) for l in data["layers"]]
    layers[2]["cycles"] = "many"
    bad([write("cycles.json", json.dumps({**data, "layers": layers}))],
        r"cycles\.json: layers\[2\]: \"cycles\" must be a finite number")
    bad([write("nolayers.json", json.dumps({k: v for k, v in data.items() if k != "layers"}))],
        r"nolayers\.json: missing \"layers\"")
    bad([good, "--kind", "bounds", "--level", "network"],
        re.escape(good) + r": no \"network\" section")
    bad([good, "--kind", "pie"], r"invalid choice: 'pie'")
    bad([good, "--kind", "compare"], r"--kind compare takes 2 reports, got 1")
    bad([good, good, "--kind", "bounds"], r"--kind bounds takes 1 report, got 2")
    bad([good, "--out", os.path.join(work, "fig.xyz")], r"unknown figure format 'xyz'")
    bad([good, "--out", os.path.join(work, "no_dir", "fig.svg")], r"cannot write file")
    # The functions raise ReportError for dicts too, naming the field.
    import octasim.plot as op
    try:
        op.cycles_by_bound({**data, "layers": layers})
        fail("cycles_by_bound accepted a layer with string cycles")
    except op.ReportError as e:
        if "layers[2]" not in str(e):
            fail(f"ReportError without the layer: {e}")
    print("errors: exit 2 with a message each")


def main():
    try:
        import numpy  # noqa: F401
        import matplotlib  # noqa: F401
    except ImportError as e:
        skip(f"{e.name} not installed (Debian: python3-numpy, python3-matplotlib)")
    if len(sys.argv) < 4:
        fail("usage: plot_tests.py CHECK OCTASIM WORKDIR [NVDLA_DIR]")
    check, octasim, work = sys.argv[1:4]
    nvdla = sys.argv[4] if len(sys.argv) > 4 else ""
    os.makedirs(work, exist_ok=True)
    for f in os.listdir(work):
        if f.endswith((".svg", ".json", ".xyz")):
            os.remove(os.path.join(work, f))
    if check == "trace":
        check_trace(octasim, work, nvdla)
    elif check == "net":
        check_net(octasim, work)
    elif check == "demo":
        check_demo(octasim, work)
    elif check == "compare":
        check_compare(octasim, work, nvdla)
    elif check == "errors":
        check_errors(octasim, work)
    else:
        fail(f"unknown check {check}")
    print("PASS")


if __name__ == "__main__":
    main()
