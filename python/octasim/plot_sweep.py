"""octasim.plot's sweep figure: an `octasim sweep` table (`--out RESULTS.csv|.json`) as fps (or
another column) against peak MACs per cycle, a line per DRAM bandwidth. octasim.plot re-exports
load_sweep, sweep_series and sweep; `python3 -m octasim.plot RESULTS.csv` draws it."""

import json
import math
import os

from ._figure import ReportError
from ._figure import new_axes as _axes
from ._figure import type_name as _type_name


SWEEP_NUMBERS = ("trace_cycles", "compute_cycles", "fps", "mac_utilization",
                 "peak_macs_per_cycle", "peak_dram_bytes_per_cycle", "dram_bytes", "saturations",
                 "host_seconds", "rank")
_SWEEP_NEEDS = ("input", "config", "result", "peak_macs_per_cycle", "peak_dram_bytes_per_cycle")


def is_sweep_file(path):
    """Whether `path` names an `octasim sweep` table (.csv, or JSON with its "format")."""
    if str(path).lower().endswith(".csv"):
        return True
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f).get("format") == "octasim-sweep"
    except (OSError, ValueError, AttributeError):
        return False


def load_sweep(results):
    """The rows of an `octasim sweep` table as a list of dicts: the numeric columns as floats
    (None where empty: an error row's cycles, a trace's fps), the others as strings.

    `results` is such a list already, or the path of the .csv / .json file the sweep wrote.
    Raises ReportError naming the file (and the line) and what was expected."""
    import csv

    if isinstance(results, list):
        name, raw, lines = "results", results, None
    else:
        name = os.fsdecode(results)
        try:
            with open(name, encoding="utf-8", newline="") as f:
                if name.lower().endswith(".csv"):
                    reader = csv.DictReader(f)
                    raw, lines = [], []
                    for row in reader:
                        raw.append(row)
                        lines.append(reader.line_num)
                    missing = [c for c in _SWEEP_NEEDS if c not in (reader.fieldnames or [])]
                else:
                    data = json.load(f)
                    if not isinstance(data, dict) or data.get("format") != "octasim-sweep":
                        raise ReportError(f"{name}: expected an octasim sweep's JSON table "
                                          "(\"format\": \"octasim-sweep\")")
                    raw, lines = data.get("rows"), None
                    if not isinstance(raw, list):
                        raise ReportError(f"{name}: \"rows\" must be an array")
                    missing = [c for c in _SWEEP_NEEDS if c not in data.get("columns", [])]
        except FileNotFoundError:
            raise ReportError(f"{name}: cannot open file: no such file") from None
        except json.JSONDecodeError as e:
            raise ReportError(f"{name}:{e.lineno}:{e.colno}: not a JSON document: {e.msg}") \
                from None
        except (OSError, UnicodeDecodeError, csv.Error) as e:
            raise ReportError(f"{name}: cannot read file: {e}") from None
        if missing:
            raise ReportError(f"{name}: not an octasim sweep table: no column "
                              f"{', '.join(missing)}")
    rows = []
    for i, row in enumerate(raw):
        where = f"{name}:{lines[i]}" if lines else f"{name}: rows[{i}]"
        if not isinstance(row, dict):
            raise ReportError(f"{where}: expected an object, got {_type_name(row)}")
        out = dict(row)
        for key in SWEEP_NUMBERS:
            value = row.get(key)
            if value in ("", None):
                out[key] = None
                continue
            try:
                if isinstance(value, bool):
                    raise ValueError
                out[key] = float(value)
            except (TypeError, ValueError):
                raise ReportError(f"{where}: column {key}: expected a number, got "
                                  f"{json.dumps(value)}") from None
            if not math.isfinite(out[key]):
                raise ReportError(f"{where}: column {key}: expected a finite number")
        rows.append(out)
    return rows


def sweep_series(results, y=None):
    """What sweep() draws: {"y": column, "series": [(input, bandwidth, [(macs, value)])]}.

    Rows that ran (pass or fail) with a value in column `y` (default: fps when a row has one,
    else trace_cycles), grouped by input and peak_dram_bytes_per_cycle; x is
    peak_macs_per_cycle. Where rows share a point (configurations differing in another key),
    the best value is kept: the highest fps or MAC utilization, the fewest cycles or bytes."""
    rows = load_sweep(results)
    if y is None:
        y = "fps" if any(r["fps"] is not None for r in rows) else "trace_cycles"
    if y not in SWEEP_NUMBERS:
        raise ReportError(f"y must be one of {', '.join(SWEEP_NUMBERS)}, not {y!r}")
    best = max if y in ("fps", "mac_utilization") else min
    groups = {}
    for r in rows:
        if r.get("result") not in ("pass", "fail") or r[y] is None:
            continue
        if r["peak_macs_per_cycle"] is None or r["peak_dram_bytes_per_cycle"] is None:
            continue
        points = groups.setdefault((r["input"], r["peak_dram_bytes_per_cycle"]), {})
        x = r["peak_macs_per_cycle"]
        points[x] = r[y] if x not in points else best(points[x], r[y])
    if not groups:
        raise ReportError(f"{'results' if isinstance(results, list) else results}: no row that "
                          f"ran has {y}")
    series = [(inp, bw, sorted(points.items())) for (inp, bw), points in sorted(groups.items())]
    return {"y": y, "series": series}


_Y_LABELS = {"fps": "inferences per second (fps)", "trace_cycles": "trace cycles",
             "compute_cycles": "compute cycles", "mac_utilization": "MAC utilization",
             "dram_bytes": "DRAM bytes"}


def sweep(results, ax=None, y=None):
    """A sweep's table (see sweep_series): a line per input and DRAM bandwidth through its
    points, x = peak MACs per cycle (atomic-C x atomic-K, log 2 axis). Lines carry the gids
    sweep-0, sweep-1, ... in sweep_series' order."""
    data = sweep_series(results, y)
    ax = _axes(ax, (7, 5))
    inputs = sorted({inp for inp, _, _ in data["series"]})
    xs = set()
    for k, (inp, bw, points) in enumerate(data["series"]):
        label = f"DRAM {bw:g} B/cycle"
        if len(inputs) > 1:
            label = f"{os.path.basename(inp)}, {label}"
        ax.plot([p[0] for p in points], [p[1] for p in points], marker="o", gid=f"sweep-{k}",
                label=label)
        xs.update(p[0] for p in points)
    ax.set_xscale("log", base=2)
    ax.set_xticks(sorted(xs), [f"{x:g}" for x in sorted(xs)])
    ax.minorticks_off()
    ax.set_xlabel("peak MACs per cycle (atomic-C x atomic-K)")
    ax.set_ylabel(_Y_LABELS.get(data["y"], data["y"]))
    name = os.path.basename(inputs[0]) if len(inputs) == 1 else f"{len(inputs)} inputs"
    ax.set_title(f"octasim sweep: {name}, {data['y']} against MACs and DRAM bandwidth")
    ax.grid(True, linewidth=0.5, alpha=0.5)
    ax.legend(fontsize=8)
    return ax
