"""Figures of octasim run reports (the JSON `octasim run|demo|net --report R.json` writes).

Pure Python: NumPy and matplotlib (Debian python3-matplotlib); it never loads octasim's C++
extension, so it also works on reports copied to another machine.

    roofline(report, ax=None, metric="macs")   the layers on the configuration's roofline
    cycles_by_bound(report, ax=None, level="hardware")
                                              each layer's cycles split by what bounded them
    utilization(report, ax=None, over="run")  busy share of every unit, the DRAM and the CV-SRAM
    compare(report_a, report_b, ax=None)      per-layer cycles of two reports side by side
    sweep(results, ax=None, y=None)           an `octasim sweep` table: fps (or cycles) against
                                              peak MACs per cycle, a line per DRAM bandwidth

`report` is a dict (as json.load returns it, or octasim.run's result) or a path to the JSON
file. Every function draws into `ax` (a new figure's axes when None) and returns the axes.
Each drawn layer, unit or bar carries a matplotlib gid (layer-3, busy-3, unit-CONV.CSC, a-2,
...) that SVG output keeps as the element's id.

Command line (Agg backend, no display needed; the format follows --out's extension):

    python3 -m octasim.plot REPORT.json [REPORT_B.json]
        [--kind roofline|bounds|utilization|compare] [--metric macs|ops]
        [--level hardware|network] [--over run|active] --out fig.svg
    python3 -m octasim.plot RESULTS.csv|RESULTS.json [--kind sweep] [--y fps|...] --out fig.svg

A missing or malformed report, an unknown kind or an unwritable output prints one line
`python3 -m octasim.plot: error: ...` on stderr and exits with status 2.
"""

import argparse
import json
import math
import os
import re
import sys

import numpy as np

from ._figure import ReportError
from ._figure import new_axes as _axes
from ._figure import type_name as _type_name
from .plot_sweep import SWEEP_NUMBERS, is_sweep_file, load_sweep, sweep, sweep_series

__all__ = ["ReportError", "load_report", "roofline", "cycles_by_bound", "utilization", "compare",
           "load_sweep", "sweep_series", "sweep", "main"]

KINDS = ("roofline", "bounds", "utilization", "compare", "sweep")
PROG = "python3 -m octasim.plot"


# ---------------------------------------------------------------------------------------------
# Reading a report


class _Report(dict):
    """A report checked by load_report; `source` names it in error messages."""

    source = "report"


def _expect(obj, key, kind, where, required=False):
    """Checks obj[key] is of JSON type `kind` (dict, list, str, bool; absent is fine unless
    required)."""
    if key not in obj:
        if required:
            raise ReportError(f"{where}: missing \"{key}\"")
        return
    value = obj[key]
    if not isinstance(value, kind) or (kind is not bool and isinstance(value, bool)):
        raise ReportError(f"{where}: \"{key}\" must be {_type_name(kind())}, "
                          f"got {_type_name(value)}")


def load_report(report):
    """The report as a dict: `report` itself when it is one, else the JSON file at that path.

    Checks what the figures rely on: a JSON object with "schema_version": 1, a "result" object,
    a "layers" array of objects each with an "engine" name and "cycles", and the JSON types of
    the other fields the figures read. Raises ReportError naming the file (and the line and
    column of malformed JSON) and what was expected."""
    if isinstance(report, _Report):
        return report
    if isinstance(report, dict):
        name = "report"
        data = report
    elif isinstance(report, (str, bytes, os.PathLike)):
        name = os.fsdecode(report)
        try:
            with open(name, encoding="utf-8") as f:
                text = f.read()
        except FileNotFoundError:
            raise ReportError(f"{name}: cannot open file: no such file") from None
        except (OSError, UnicodeDecodeError) as e:
            raise ReportError(f"{name}: cannot read file: {e}") from None
        try:
            data = json.loads(text)
        except json.JSONDecodeError as e:
            raise ReportError(f"{name}:{e.lineno}:{e.colno}: not a JSON document: {e.msg}") \
                from None
    else:
        raise ReportError(f"a report must be a dict or a path, not {type(report).__name__}")
    if not isinstance(data, dict):
        raise ReportError(f"{name}: expected a JSON object (an octasim run report), "
                          f"got {_type_name(data)}")
    version = data.get("schema_version")
    if version != 1 or isinstance(version, bool):
        raise ReportError(f"{name}: expected \"schema_version\": 1 (an octasim run report), "
                          f"got {json.dumps(version)}")
    _expect(data, "result", dict, name, required=True)
    _expect(data, "layers", list, name, required=True)
    for key in ("config", "dram", "cvsram"):
        _expect(data, key, dict, name)
    _expect(data, "trace", str, name)
    for i, layer in enumerate(data["layers"]):
        where = f"{name}: layers[{i}]"
        if not isinstance(layer, dict):
            raise ReportError(f"{where}: expected an object, got {_type_name(layer)}")
        _expect(layer, "engine", str, where, required=True)
        _number(layer, "cycles", where)
        if "index" in layer:
            _number(layer, "index", where)
        for key in ("roofline", "mac_utilization", "counters"):
            _expect(layer, key, dict, where)
        _expect(layer, "units", list, where)
        _expect(layer, "onnx_nodes", str, where)
        _expect(layer, "finished", bool, where)
        for k, unit in enumerate(layer.get("units", [])):
            if not isinstance(unit, dict):
                raise ReportError(f"{where}.units[{k}]: expected an object, got "
                                  f"{_type_name(unit)}")
            _expect(unit, "name", str, f"{where}.units[{k}]", required=True)
    checked = _Report(data)
    checked.source = name
    return checked


def _number(obj, key, where, default=None):
    """obj[key] as a float; `default` when absent (ReportError when absent without default)."""
    value = obj.get(key) if isinstance(obj, dict) else None
    if value is None:
        if default is not None:
            return float(default)
        raise ReportError(f"{where}: missing number \"{key}\"")
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ReportError(f"{where}: \"{key}\" must be a finite number, got {json.dumps(value)}")
    return float(value)


def _label(layer, i):
    """A short x tick label: index and engine, and the first ONNX node's name when known."""
    text = f"{layer.get('index', i)} {layer['engine']}"
    nodes = layer.get("onnx_nodes")
    if isinstance(nodes, str):
        names = re.findall(r"'([^']*)'", nodes)
        if names:
            text += "\n" + names[0]
    return text


def _title(report):
    trace = os.path.basename(str(report.get("trace", "")))
    config = report.get("config", {}).get("name", "")
    return ", ".join(t for t in (trace, config) if t)


# ---------------------------------------------------------------------------------------------
# Roofline


def _peak_bandwidth(report):
    """Peak DRAM bytes per cycle: the run's memory system (dram.peak_bytes_per_cycle, every
    channel), else the configuration's dram_bytes_per_cycle; None when the report has neither."""
    for obj, key in ((report.get("dram"), "peak_bytes_per_cycle"),
                     (report.get("config"), "dram_bytes_per_cycle")):
        if isinstance(obj, dict) and isinstance(obj.get(key), (int, float)) and obj[key] > 0:
            return float(obj[key])
    return None


def roofline_points(report, metric="macs"):
    """The roofline's points and roofs, as roofline() draws them.

    metric "macs": the layers with MACs (CONV); x = macs / roofline.dram_bytes (MACs per byte
    the layer's DMAs moved), y = macs / cycles (achieved MACs per cycle). Compute roofs: the
    configuration's mac_atomic_c x mac_atomic_k (INT8), plus each other peak_macs_per_cycle a
    layer reports (its precision).
    metric "ops": every layer in the report's own roofline units (a MAC is two ops; SDP, PDP,
    CDP, OCTAV one op per element); x = roofline.ops / dram_bytes, y = roofline.ops / cycles;
    a compute roof per engine at its roofline.peak_ops_per_cycle.
    Both: the bandwidth roof is y = peak DRAM bytes per cycle x intensity. Layers that moved no
    DRAM bytes, ran no cycles or did not finish have no point (listed in "skipped").

    Returns {"points": [(layer index, engine, x, y, bound)], "skipped": [layer index],
    "compute_roofs": [(label, y)], "bandwidth": bytes per cycle or None}."""
    if metric not in ("macs", "ops"):
        raise ValueError(f"metric must be 'macs' or 'ops', not {metric!r}")
    report = load_report(report)
    points, skipped, roofs, engines_at = [], [], {}, {}
    config = report.get("config", {})
    if metric == "macs" and all(isinstance(config.get(k), (int, float))
                                for k in ("mac_atomic_c", "mac_atomic_k")):
        peak = float(config["mac_atomic_c"]) * float(config["mac_atomic_k"])
        roofs[peak] = f"MAC array {peak:g} MACs/cycle"
    for i, layer in enumerate(report["layers"]):
        where = f"{report.source}: layers[{i}]"
        roof = layer.get("roofline", {})
        if metric == "macs":
            if "macs" not in layer:
                continue
            work = _number(layer, "macs", where)
            peak = layer.get("mac_utilization", {}).get("peak_macs_per_cycle")
            if isinstance(peak, (int, float)) and peak > 0 and float(peak) not in roofs:
                roofs[float(peak)] = f"MAC array {peak:g} MACs/cycle"
        else:
            work = _number(roof, "ops", where + ".roofline")
            peak = roof.get("peak_ops_per_cycle")
            if isinstance(peak, (int, float)) and peak > 0:
                engines = engines_at.setdefault(float(peak), [])
                if layer["engine"] not in engines:
                    engines.append(layer["engine"])
                roofs[float(peak)] = f"{', '.join(engines)} {peak:g} ops/cycle"
        cycles = _number(layer, "cycles", where)
        moved = _number(roof, "dram_bytes", where + ".roofline", default=(
            _number(layer, "bytes_read", where, 0) + _number(layer, "bytes_written", where, 0)))
        if work <= 0 or cycles <= 0 or moved <= 0 or layer.get("finished") is False:
            skipped.append(int(layer.get("index", i)))
            continue
        points.append((int(layer.get("index", i)), layer["engine"], work / moved, work / cycles,
                       roof.get("bound")))
    return {"points": points, "skipped": skipped,
            "compute_roofs": sorted(((label, y) for y, label in roofs.items()),
                                    key=lambda r: -r[1]),
            "bandwidth": _peak_bandwidth(report)}


_ENGINE_COLORS = {"CONV": "tab:blue", "SDP": "tab:orange", "PDP": "tab:green",
                  "CDP": "tab:purple", "OCTAV": "tab:red", "BDMA": "tab:brown",
                  "RUBIK": "tab:pink"}


def roofline(report, ax=None, metric="macs"):
    """The run's layers on a log-log roofline (see roofline_points for what is derived from
    which report fields): a point per layer, labelled with its index, filled when the report's
    roofline calls it math-bound and hollow when memory-bound; the bandwidth roof and the
    compute roofs as lines."""
    report = load_report(report)
    data = roofline_points(report, metric)
    ax = _axes(ax, (7, 5))
    unit = "MACs" if metric == "macs" else "ops"
    xs = [p[2] for p in data["points"]]
    ys = [p[3] for p in data["points"]]
    peaks = [y for _, y in data["compute_roofs"]]
    bw = data["bandwidth"]
    # The x range covers the points and the ridge points, a decade either side.
    ridges = [y / bw for y in peaks] if bw else []
    span = xs + ridges or [1.0]
    lo = 10 ** math.floor(math.log10(min(span)) - 1)
    hi = 10 ** math.ceil(math.log10(max(span)) + 1)
    x = np.geomspace(lo, hi, 256)
    if bw:
        top = max(peaks) if peaks else None
        yb = bw * x if top is None else np.minimum(bw * x, top)
        ax.plot(x, yb, color="0.25", linewidth=1.5, gid="roof-bandwidth",
                label=f"DRAM {bw:g} B/cycle")
    for k, (label, peak) in enumerate(data["compute_roofs"]):
        start = peak / bw if bw else lo
        ax.plot([start, hi], [peak, peak], color="0.25", linewidth=1.5,
                linestyle="-" if k == 0 else "--", gid=f"roof-compute-{k}", label=label)
    engines = []
    for index, engine, px, py, bound in data["points"]:
        color = _ENGINE_COLORS.get(engine, "tab:gray")
        if engine not in engines:
            engines.append(engine)
        ax.plot([px], [py], linestyle="none", marker="o", markersize=7,
                markerfacecolor=color if bound != "memory" else "white",
                markeredgecolor=color, markeredgewidth=1.5, gid=f"layer-{index}")
        ax.annotate(str(index), (px, py), textcoords="offset points", xytext=(5, 4),
                    fontsize=8)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(lo, hi)
    ytop = max(ys + peaks + [1.0])
    ybot = min(ys + [p / 10 for p in peaks] + [ytop / 1000])
    ax.set_ylim(10 ** math.floor(math.log10(ybot)), 10 ** math.ceil(math.log10(ytop) + 0.3))
    ax.set_xlabel(f"arithmetic intensity ({unit} per DRAM byte)")
    ax.set_ylabel(f"achieved {unit} per cycle")
    title = f"roofline: {_title(report)}"
    if data["skipped"]:
        title += f"\n(no point: layer {', '.join(map(str, data['skipped']))})"
    ax.set_title(title)
    ax.grid(True, which="major", linewidth=0.5, alpha=0.5)
    from matplotlib.lines import Line2D

    handles, _ = ax.get_legend_handles_labels()
    for engine in engines:  # one filled marker per engine, whatever its first layer's bound
        color = _ENGINE_COLORS.get(engine, "tab:gray")
        handles.append(Line2D([], [], linestyle="none", marker="o", markersize=7, color=color,
                              label=engine))
    ax.legend(handles=handles, loc="lower right", fontsize=8,
              title="filled: math-bound, hollow: memory-bound", title_fontsize=8)
    return ax


# ---------------------------------------------------------------------------------------------
# Cycles by bound

# (gid prefix, legend label, colour) of the segments a layer's cycles are split into.
BOUND_SEGMENTS = (
    ("busy", "datapath busy (compute)", "tab:blue"),
    ("read-stall", "read stall (waiting for input)", "tab:orange"),
    ("write-stall", "write stall (waiting for room towards the output)", "tab:red"),
    ("other", "other (fill, drain, latency)", "0.75"),
)


# The unit whose busy cycles are the engine's datapath busy cycles.
DATAPATH_UNITS = ("CSC", "core", "datapath")


def bound_segments(report):
    """Each layer's cycles split as cycles_by_bound() stacks them: the datapath's busy cycles
    (the engine's counter dla.ENGINE.busy_cycles — CONV: the CSC issuing packages, SDP/PDP/CDP:
    the core, OCTAV: the datapath — else that unit's busy_cycles), the layer's read_stall_cycles
    and write_stall_cycles (the datapath waiting for input, for room towards the output), and
    the rest of its cycles ("other": pipeline fill and drain, DMA latency; never below 0).
    Returns a list of (tick label, {segment gid prefix: cycles}, roofline bound)."""
    report = load_report(report)
    rows = []
    for i, layer in enumerate(report["layers"]):
        where = f"{report.source}: layers[{i}]"
        cycles = _number(layer, "cycles", where)
        counters = layer.get("counters", {})
        busy = counters.get(f"dla.{layer['engine']}.busy_cycles")
        if busy is not None:
            busy = _number(counters, f"dla.{layer['engine']}.busy_cycles", where + ".counters")
        else:
            busy = 0.0  # an unfinished layer's counters are empty
            for unit in layer.get("units", []):
                if isinstance(unit, dict) and unit.get("name") in DATAPATH_UNITS:
                    busy = _number(unit, "busy_cycles", where + f".units[{unit['name']}]")
        read = _number(layer, "read_stall_cycles", where, 0)
        write = _number(layer, "write_stall_cycles", where, 0)
        other = max(0.0, cycles - busy - read - write)
        rows.append((_label(layer, i),
                     {"busy": busy, "read-stall": read, "write-stall": write, "other": other},
                     layer.get("roofline", {}).get("bound")))
    return rows


_NETWORK_BOUND_COLORS = {"compute": "tab:blue", "DRAM": "tab:orange", "SRAM": "tab:olive",
                         "CBUF refill": "tab:purple", "delivery": "tab:red"}


def network_bounds(report):
    """The network's layers of an `octasim net` report (its "network" section): [(tick label,
    cycles, bound name, share)] — the bound is what `octasim net` prints: the largest of compute,
    DRAM, SRAM, CBUF refill and delivery, `share` that quantity over the layer's cycles (the
    DRAM/SRAM estimate can exceed 1 on split layers)."""
    report = load_report(report)
    net = report.get("network")
    if not isinstance(net, dict) or not isinstance(net.get("layers"), list):
        raise ReportError(f"{report.source}: no \"network\" section (a report of octasim net "
                          f"has one; octasim run's has not)")
    rows = []
    for k, layer in enumerate(net["layers"]):
        where = f"{report.source}: network.layers[{k}]"
        if not isinstance(layer, dict):
            raise ReportError(f"{where}: expected an object, got {_type_name(layer)}")
        _expect(layer, "bound", str, where, required=True)
        _expect(layer, "engine", str, where)
        _expect(layer, "onnx_nodes", str, where)
        label = {"index": _number(layer, "layer", where, k), "engine": layer.get("engine", "?"),
                 "onnx_nodes": layer.get("onnx_nodes")}
        label["index"] = int(label["index"])
        rows.append((_label(label, k), _number(layer, "cycles", where), layer["bound"],
                     _number(layer, "bound_share", where)))
    return rows


def _network_cycles_by_bound(report, ax):
    rows = network_bounds(report)
    ax = _axes(ax, (max(6.0, 0.7 * len(rows) + 2), 5))
    pos = np.arange(len(rows))
    shown = set()
    for k, (_, cycles, bound, share) in enumerate(rows):
        part = cycles * min(max(share, 0.0), 1.0)
        color = _NETWORK_BOUND_COLORS.get(bound, "tab:gray")
        ax.bar(pos[k], part, 0.7, color=color, gid=f"bound-{k}",
               label=bound if bound not in shown else None)
        shown.add(bound)
        ax.bar(pos[k], cycles - part, 0.7, bottom=part, color="0.85", gid=f"rest-{k}",
               label="rest of the layer's cycles" if k == len(rows) - 1 else None)
        ax.annotate(f"{bound} {100.0 * share:.0f}%", (pos[k], cycles),
                    textcoords="offset points", xytext=(0, 3), ha="center", fontsize=7)
    ax.set_xticks(pos, [r[0] for r in rows], fontsize=8)
    ax.set_xlabel("network layer")
    ax.set_ylabel("cycles")
    ax.set_ylim(0, max([r[1] * 1.12 for r in rows] + [1.0]))
    ax.set_title(f"cycles per network layer by bound: {_title(report)}")
    ax.legend(fontsize=8)
    return ax


def cycles_by_bound(report, ax=None, level="hardware"):
    """level "hardware": per hardware layer a bar of its cycles stacked by what the datapath
    did (bound_segments), with the report's roofline bound (math/memory) above each bar.
    level "network" (reports of octasim net): per network layer a bar of its cycles, the share
    its bound accounts for coloured by the bound (network_bounds), the rest grey."""
    if level not in ("hardware", "network"):
        raise ValueError(f"level must be 'hardware' or 'network', not {level!r}")
    report = load_report(report)
    if level == "network":
        return _network_cycles_by_bound(report, ax)
    rows = bound_segments(report)
    ax = _axes(ax, (max(6.0, 0.7 * len(rows) + 2), 5))
    pos = np.arange(len(rows))
    bottom = np.zeros(len(rows))
    for key, label, color in BOUND_SEGMENTS:
        heights = np.array([r[1][key] for r in rows], dtype=float)
        bars = ax.bar(pos, heights, 0.7, bottom=bottom, color=color, label=label)
        for k, bar in enumerate(bars):
            bar.set_gid(f"{key}-{k}")
        bottom += heights
    for k, r in enumerate(rows):
        if r[2]:
            ax.annotate(r[2], (pos[k], bottom[k]), textcoords="offset points", xytext=(0, 3),
                        ha="center", fontsize=7)
    ax.set_xticks(pos, [r[0] for r in rows], fontsize=8)
    ax.set_xlabel("layer")
    ax.set_ylabel("cycles")
    ax.set_ylim(0, max(bottom.max(initial=0) * 1.12, 1))
    ax.set_title(f"cycles per layer by bound: {_title(report)}")
    ax.legend(fontsize=8)
    return ax


# ---------------------------------------------------------------------------------------------
# Utilization per unit


def unit_utilization(report, over="run"):
    """Busy fraction of every unit: per engine unit (CONV.CDMA_DAT, CONV.CSC, PDP.core, ...) its
    busy_cycles summed over the layers, the DRAM's bus busy_cycles and the CV-SRAM's, each over
    the run's result.trace_cycles (over="run"), or the engine units over their engine's cycles
    (the sum of its layers' cycles) and the memories over the trace (over="active").
    Returns [(unit name, fraction)] in the order the layers first use the units, memories last."""
    if over not in ("run", "active"):
        raise ValueError(f"over must be 'run' or 'active', not {over!r}")
    report = load_report(report)
    trace = _number(report["result"], "trace_cycles", f"{report.source}: result")
    busy, engine_cycles = {}, {}
    for i, layer in enumerate(report["layers"]):
        engine = layer["engine"]
        where = f"{report.source}: layers[{i}]"
        engine_cycles[engine] = engine_cycles.get(engine, 0.0) + _number(layer, "cycles", where)
        for unit in layer.get("units", []):
            name = f"{engine}.{unit['name']}"
            busy[name] = busy.get(name, 0.0) + _number(unit, "busy_cycles",
                                                       f"{where}.units[{unit['name']}]")
    rows = []
    for name, cycles in busy.items():
        denom = trace if over == "run" else engine_cycles[name.split(".")[0]]
        rows.append((name, cycles / denom if denom > 0 else 0.0))
    for key, name in (("dram", "DRAM"), ("cvsram", "CV-SRAM")):
        mem = report.get(key)
        if isinstance(mem, dict) and "busy_cycles" in mem:
            cycles = _number(mem, "busy_cycles", f"{report.source}: {key}")
            rows.append((name, cycles / trace if trace > 0 else 0.0))
    return rows


def utilization(report, ax=None, over="run"):
    """A horizontal bar per unit: its busy share (unit_utilization), as a percentage."""
    report = load_report(report)
    rows = unit_utilization(report, over)
    ax = _axes(ax, (7, max(3.0, 0.35 * len(rows) + 1.5)))
    pos = np.arange(len(rows))
    colors = [_ENGINE_COLORS.get(name.split(".")[0], "0.45") for name, _ in rows]
    bars = ax.barh(pos, [100.0 * f for _, f in rows], 0.7, color=colors)
    for (name, frac), bar in zip(rows, bars):
        bar.set_gid(f"unit-{name}")
        ax.annotate(f"{100.0 * frac:.1f}%", (bar.get_width(), bar.get_y() + bar.get_height() / 2),
                    textcoords="offset points", xytext=(3, 0), va="center", fontsize=7)
    ax.set_yticks(pos, [name for name, _ in rows], fontsize=8)
    ax.invert_yaxis()
    ax.set_xlim(0, max([100.0] + [105.0 * f for _, f in rows]))
    what = "the trace's cycles" if over == "run" else "the engine's layers' cycles"
    ax.set_xlabel(f"utilization (% busy cycles of {what}; memories: of the trace)"
                  if over == "active" else f"utilization (% busy cycles of {what})")
    ax.set_ylabel("unit")
    ax.set_title(f"utilization per unit: {_title(report)}")
    ax.grid(True, axis="x", linewidth=0.5, alpha=0.5)
    return ax


# ---------------------------------------------------------------------------------------------
# Two reports


def matched_layers(report_a, report_b):
    """The layers of two reports paired: by engine, ONNX nodes (when the reports have them) and
    occurrence of that pair, so the same trace or network on two configurations pairs layer by
    layer even where they started in another order. Returns [(label, cycles A or None, cycles B
    or None)]: A's layers in order, then B's unmatched ones."""
    a = load_report(report_a)
    b = load_report(report_b)

    def keyed(report):
        seen, out = {}, []
        for i, layer in enumerate(report["layers"]):
            base = (layer["engine"], layer.get("onnx_nodes"))
            seen[base] = seen.get(base, 0) + 1
            out.append(((*base, seen[base]), i, layer))
        return out

    kb = {key: (i, layer) for key, i, layer in keyed(b)}
    used, rows = set(), []
    for key, i, layer in keyed(a):
        other = kb.get(key)
        cb = None
        if other is not None:
            used.add(key)
            cb = float(other[1]["cycles"])
        rows.append((_label(layer, i), float(layer["cycles"]), cb))
    for key, i, layer in keyed(b):
        if key not in used:
            rows.append((_label(layer, i) + " (B)", None, float(layer["cycles"])))
    return rows


def compare(report_a, report_b, ax=None, labels=None):
    """Per-layer cycles of two reports as paired bars (matched_layers), B over A above each
    pair. `labels`: the two reports' legend names (default: A and B with their configuration
    and trace file)."""
    a = load_report(report_a)
    b = load_report(report_b)
    rows = matched_layers(a, b)
    if labels is None:
        labels = (f"A: {_title(a)}", f"B: {_title(b)}")
    ax = _axes(ax, (max(6.0, 0.8 * len(rows) + 2), 5))
    pos = np.arange(len(rows))
    width = 0.4
    for side, (offset, color, name) in enumerate(((-width / 2, "tab:blue", labels[0]),
                                                  (width / 2, "tab:orange", labels[1]))):
        have = [k for k, r in enumerate(rows) if r[1 + side] is not None]
        bars = ax.bar(pos[have] + offset, [rows[k][1 + side] for k in have], width, color=color,
                      label=name)
        for k, bar in zip(have, bars):
            bar.set_gid(f"{'ab'[side]}-{k}")
    for k, (_, ca, cb) in enumerate(rows):
        if ca and cb is not None:
            ax.annotate(f"x{cb / ca:.2f}", (pos[k], max(ca, cb)), textcoords="offset points",
                        xytext=(0, 3), ha="center", fontsize=7)
    ax.set_xticks(pos, [r[0] for r in rows], fontsize=8)
    ax.set_xlabel("layer")
    ax.set_ylabel("cycles")
    top = max([v for r in rows for v in r[1:] if v is not None] + [1.0])
    ax.set_ylim(0, top * 1.15)
    ta = _number(a["result"], "trace_cycles", f"{a.source}: result")
    tb = _number(b["result"], "trace_cycles", f"{b.source}: result")
    ratio = f", x{tb / ta:.2f}" if ta > 0 else ""
    ax.set_title(f"cycles per layer: A {ta:.0f}, B {tb:.0f} trace cycles{ratio}")
    ax.legend(fontsize=8)
    return ax


# ---------------------------------------------------------------------------------------------
# Command line


def _parser():
    p = argparse.ArgumentParser(
        prog=PROG,
        description="Draw a figure of an octasim run report (octasim run|demo|net --report).")
    p.add_argument("reports", nargs="+", metavar="REPORT.json",
                   help="the report; two for --kind compare; an octasim sweep's RESULTS.csv or "
                        ".json for --kind sweep")
    p.add_argument("--kind", choices=KINDS,
                   help="roofline (default with one report), bounds (per-layer cycles stacked "
                        "by bound), utilization (per unit), compare (default with two reports), "
                        "sweep (default for a sweep's table: fps against MACs and bandwidth)")
    p.add_argument("--y", choices=SWEEP_NUMBERS[:-2],
                   help="sweep: the column on the y axis (default fps, else trace_cycles)")
    p.add_argument("--metric", choices=("macs", "ops"), default="macs",
                   help="roofline units: MACs (CONV layers) or the report's ops (every layer)")
    p.add_argument("--level", choices=("hardware", "network"), default="hardware",
                   help="bounds: per hardware layer (the datapath's busy and stall cycles) or "
                        "per network layer (octasim net's bound and its share)")
    p.add_argument("--over", choices=("run", "active"), default="run",
                   help="utilization: busy cycles over the trace's cycles, or over the "
                        "engine's layers' cycles")
    p.add_argument("--out", required=True, metavar="FILE",
                   help="the figure; its extension picks the format (svg, png, pdf, ...)")
    return p


def _error(message):
    print(f"{PROG}: error: {message}", file=sys.stderr)
    return 2


def main(argv=None):
    args = _parser().parse_args(argv)  # usage errors: argparse's message, exit 2
    kind = args.kind or ("compare" if len(args.reports) == 2 else
                         "sweep" if is_sweep_file(args.reports[0]) else "roofline")
    want = 2 if kind == "compare" else 1
    if len(args.reports) != want:
        return _error(f"--kind {kind} takes {want} report{'s' if want > 1 else ''}, "
                      f"got {len(args.reports)}")
    try:
        import matplotlib
    except ImportError:
        print(f"{PROG}: error: matplotlib is not installed (Debian: python3-matplotlib)",
              file=sys.stderr)
        return 1
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ext = os.path.splitext(args.out)[1].lstrip(".").lower()
    formats = plt.figure().canvas.get_supported_filetypes()
    plt.close("all")
    if ext not in formats:
        return _error(f"{args.out}: unknown figure format '{ext}' (expected one of "
                      f"{', '.join(sorted(formats))})")
    # Text stays text in an SVG (searchable, editable); no date, fixed ids: the same report
    # gives the same file.
    with matplotlib.rc_context({"svg.fonttype": "none", "svg.hashsalt": "octasim"}):
        try:
            reports = [] if kind == "sweep" else [load_report(r) for r in args.reports]
            if kind == "sweep":
                ax = sweep(args.reports[0], y=args.y)
            elif kind == "roofline":
                ax = roofline(reports[0], metric=args.metric)
            elif kind == "bounds":
                ax = cycles_by_bound(reports[0], level=args.level)
            elif kind == "utilization":
                ax = utilization(reports[0], over=args.over)
            else:
                ax = compare(reports[0], reports[1],
                             labels=[f"{n}: {_title(r)}" for n, r in
                                     zip(("A", "B"), reports)])
        except ReportError as e:
            return _error(str(e))
        metadata = {"Date": None} if ext == "svg" else None
        try:
            ax.figure.savefig(args.out, metadata=metadata)
        except OSError as e:
            return _error(f"{args.out}: cannot write file: {e.strerror or e}")
        finally:
            plt.close("all")
    return 0


if __name__ == "__main__":
    sys.exit(main())
