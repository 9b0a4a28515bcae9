#!/usr/bin/python3
"""octasim.plot's sweep figure (python/octasim/plot.py: load_sweep, sweep_series, sweep), on a
real `octasim sweep` table. Registered by tests/sweep/CMakeLists.txt.

sweep_plot_test.py OCTASIM WORKDIR MODEL.onnx

A network swept over dram_bytes_per_cycle=2,4,8 x mac_atomic_k=8,16 on nv_small (atomic-C 8) and
nv_small_256 (atomic-C 32): the figure has a line per bandwidth through the four MAC counts, its
data equal to the table's fps read here with the csv module; the same figure from the table's
JSON form; a higher bandwidth's line is never below a lower one's in the SVG; bad tables exit 2
with one line naming the file. Needs PYTHONPATH to hold build/python; exit 77 (skipped) without
NumPy or matplotlib.
"""
import csv
import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET

SVG = "{http://www.w3.org/2000/svg}"
OCTASIM, WORK, MODEL = sys.argv[1:4]


def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)


def run(cmd, expect=0):
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != expect:
        fail(f"{' '.join(cmd)}: exit {p.returncode}, expected {expect}\n{p.stdout}\n{p.stderr}")
    return p


def plot(args, expect=0):
    return run([sys.executable, "-m", "octasim.plot", *args], expect)


def svg_lines(path):
    """gid -> the (x, y) vertices of the line drawn in that group."""
    root = ET.parse(path).getroot()
    lines = {}
    for e in root.iter():
        gid = e.get("id") or ""
        if re.fullmatch(r"sweep-\d+", gid):
            d = next(e.iter(SVG + "path")).get("d")
            nums = [float(v) for v in re.findall(r"-?\d+(?:\.\d+)?(?:e-?\d+)?", d)]
            lines[gid] = list(zip(nums[0::2], nums[1::2]))
    return lines


def main():
    try:
        import numpy  # noqa: F401
        import matplotlib
    except ImportError as e:
        print(f"SKIP: {e}")
        sys.exit(77)
    matplotlib.use("Agg")
    os.makedirs(WORK, exist_ok=True)
    table = os.path.join(WORK, "grid.csv")
    run([OCTASIM, "sweep", "--networks", MODEL, "--configs", "nv_small,nv_small_256", "--grid",
         "dram_bytes_per_cycle=2,4,8", "--grid", "mac_atomic_k=8,16", "--out", table, "--jobs",
         "2"])
    with open(table, newline="") as f:
        rows = list(csv.DictReader(f))
    if len(rows) != 12 or any(r["result"] != "pass" for r in rows):
        fail(f"{table}: expected 12 passing rows: {[(r['result'], r['message']) for r in rows]}")
    atomic_c = {"nv_small": 8, "nv_small_256": 32}
    want = {}  # bandwidth -> [(peak MACs, fps)] sorted by MACs
    for r in rows:
        macs = atomic_c[r["config"]] * int(r["mac_atomic_k"])
        want.setdefault(float(r["dram_bytes_per_cycle"]), []).append((macs, float(r["fps"])))
    for points in want.values():
        points.sort()

    # The drawn data, through the functions.
    import octasim.plot as op
    ax = op.sweep(table)
    lines = {line.get_gid(): line for line in ax.get_lines()}
    if sorted(lines) != ["sweep-0", "sweep-1", "sweep-2"]:
        fail(f"lines {sorted(lines)}, expected one per bandwidth")
    labels = [lines[f"sweep-{k}"].get_label() for k in range(3)]
    if labels != ["DRAM 2 B/cycle", "DRAM 4 B/cycle", "DRAM 8 B/cycle"]:
        fail(f"labels {labels}")
    for k, bw in enumerate(sorted(want)):
        got = list(zip(lines[f"sweep-{k}"].get_xdata(), lines[f"sweep-{k}"].get_ydata()))
        if [(float(x), float(y)) for x, y in got] != [(float(x), y) for x, y in want[bw]]:
            fail(f"{bw} B/cycle: drawn {got}, expected {want[bw]}")
    if ax.get_xlabel() != "peak MACs per cycle (atomic-C x atomic-K)" or \
            ax.get_ylabel() != "inferences per second (fps)":
        fail(f"axis labels {ax.get_xlabel()!r}, {ax.get_ylabel()!r}")

    # The command line: the kind found from the .csv; the SVG's lines in the same order, each
    # higher bandwidth's vertices at or above (smaller SVG y) the lower one's.
    svg = os.path.join(WORK, "sweep.svg")
    plot([table, "--out", svg])
    drawn = svg_lines(svg)
    if sorted(drawn) != ["sweep-0", "sweep-1", "sweep-2"] or \
            any(len(v) != 4 for v in drawn.values()):
        fail(f"{svg}: lines {({k: len(v) for k, v in drawn.items()})}, expected 3 of 4 points")
    for k in range(2):
        for (x0, y0), (x1, y1) in zip(drawn[f"sweep-{k}"], drawn[f"sweep-{k + 1}"]):
            if abs(x0 - x1) > 1e-6 or y1 > y0 + 1e-6:
                fail(f"{svg}: sweep-{k + 1} below sweep-{k} at x {x0}")

    # The JSON table gives the same figure.
    table_json = os.path.join(WORK, "grid.json")
    run([OCTASIM, "sweep", "--networks", MODEL, "--configs", "nv_small,nv_small_256", "--grid",
         "dram_bytes_per_cycle=2,4,8", "--grid", "mac_atomic_k=8,16", "--out", table_json,
         "--jobs", "2"])
    svg_json = os.path.join(WORK, "sweep_json.svg")
    plot([table_json, "--kind", "sweep", "--out", svg_json])
    if open(svg).read() != open(svg_json).read():
        fail(f"{svg_json} differs from {svg}")
    # --y picks another column: cycles fall as the bandwidth grows.
    svg_cycles = os.path.join(WORK, "sweep_cycles.svg")
    plot([table, "--y", "trace_cycles", "--out", svg_cycles])
    series = op.sweep_series(table, "trace_cycles")["series"]
    if [s[1] for s in series] != [2.0, 4.0, 8.0]:
        fail(f"series {series}")

    # Bad tables: one line naming the file, exit 2, no figure.
    def bad(name, text, pattern):
        path = os.path.join(WORK, name)
        with open(path, "w") as f:
            f.write(text)
        out = os.path.join(WORK, "bad.svg")
        if os.path.exists(out):
            os.remove(out)
        p = plot([path, "--kind", "sweep", "--out", out], expect=2)
        lines = p.stderr.strip().splitlines()
        if len(lines) != 1 or not re.search(pattern, lines[0]):
            fail(f"{name}: stderr {p.stderr!r}, expected one line matching /{pattern}/")
        if os.path.exists(out):
            fail(f"{name}: a figure was written")

    header = open(table).readline()
    bad("foreign.csv", "a,b\n1,2\n", r"foreign\.csv: not an octasim sweep table: no column")
    bad("number.csv", header + rows_line(rows[0], header, fps="fast"),
        r"number\.csv:2: column fps: expected a number, got \"fast\"")
    bad("foreign.json", '{"schema_version": 1}', r"foreign\.json: expected an octasim sweep")
    bad("empty.csv", header, r"empty\.csv: no row that ran has trace_cycles")
    print("ok")


def rows_line(row, header, **changes):
    fields = header.strip().split(",")
    values = dict(row, **changes)
    return ",".join(values[f] for f in fields) + "\n"


if __name__ == "__main__":
    main()
