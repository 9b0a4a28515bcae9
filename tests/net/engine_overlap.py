#!/usr/bin/env python3
"""DLA and PPU run at once: a network of DLA and PPU layers under `--schedule overlap` has layers
of the two engines running in the same cycles (report: network.engines.overlap_cycles and the
layers' start/end cycles), takes fewer cycles than under `--schedule serial`, where no two layers
overlap, and the two runs compute the same outputs. Both reports follow
sim/report/report.schema.json.

It also accounts for the cycles each schedule saves, from the layers' intervals alone:
    cycles = DLA layers' cycles + PPU layers' cycles - DLA layers at once - PPU layers at once
             - DLA and PPU at once + idle (no layer running: programming, interrupts, launches)
and checks the terms against the report's own engine counters (busy = the union of an
engine's layers, overlap = both busy), so the difference between the schedules is explained
term by term.

usage: engine_overlap.py OCTASIM SCHEMA.json MODEL.onnx INPUT.npy WORKDIR [net options...]
"""

import json
import os
import subprocess
import sys

import jsonschema

SCHEMA = None


def run(octasim, model, inp, workdir, schedule, extra):
    report = os.path.join(workdir, f"overlap_{schedule}.json")
    out = os.path.join(workdir, f"overlap_{schedule}.npy")
    cmd = [octasim, "net", model, "--input", inp, "--no-progress", "--schedule", schedule,
           "--report", report, "--output", out] + extra
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    with open(report) as f:
        data = json.load(f)
    errors = sorted(jsonschema.Draft202012Validator(SCHEMA).iter_errors(data), key=str)
    if errors:
        sys.exit(f"FAIL: {report} does not follow the schema: {errors[0]}")
    with open(out, "rb") as f:
        return data["network"], f.read()


def intervals(net, engine_is_ppu):
    return [(l["start_cycle"], l["end_cycle"]) for l in net["layers"]
            if (l["engine"] == "PPU") == engine_is_ppu and l["end_cycle"] > l["start_cycle"]]


def union(iv):
    total, cur = 0, None
    for a, b in sorted(iv):
        if cur is None or a > cur[1]:
            if cur is not None:
                total += cur[1] - cur[0]
            cur = [a, b]
        else:
            cur[1] = max(cur[1], b)
    return total + (cur[1] - cur[0] if cur is not None else 0)


def account(net):
    """The terms of the identity in the docstring, and the mismatches with the report."""
    dla, ppu = intervals(net, False), intervals(net, True)
    t = {"dla": sum(b - a for a, b in dla), "ppu": sum(b - a for a, b in ppu)}
    u_dla, u_ppu, u_all = union(dla), union(ppu), union(dla + ppu)
    t["dla_at_once"] = t["dla"] - u_dla
    t["ppu_at_once"] = t["ppu"] - u_ppu
    t["both"] = u_dla + u_ppu - u_all
    t["idle"] = net["cycles"] - u_all
    e = net["engines"]
    bad = [f"{k}: intervals give {v}, the report {e[r]}"
           for k, v, r in (("DLA busy", u_dla, "dla_busy_cycles"),
                           ("PPU busy", u_ppu, "ppu_busy_cycles"),
                           ("both busy", t["both"], "overlap_cycles"),
                           ("idle", t["idle"], "idle_cycles")) if v != e[r]]
    if t["idle"] < 0:
        bad.append(f"layers run past the inference's {net['cycles']} cycles")
    return t, bad


def overlapping_pairs(net):
    return sum(1 for a in intervals(net, False) for b in intervals(net, True)
               if max(a[0], b[0]) < min(a[1], b[1]))


def main():
    global SCHEMA
    if len(sys.argv) < 6:
        sys.exit(__doc__)
    octasim, schema, model, inp, workdir = sys.argv[1:6]
    extra = sys.argv[6:]
    with open(schema) as f:
        SCHEMA = json.load(f)
    jsonschema.Draft202012Validator.check_schema(SCHEMA)
    os.makedirs(workdir, exist_ok=True)
    over, out_over = run(octasim, model, inp, workdir, "overlap", extra)
    serial, out_serial = run(octasim, model, inp, workdir, "serial", extra)
    failures = []
    e_over, e_serial = over["engines"], serial["engines"]
    if over["fallback"]["ppu_layers"] == 0 or over["fallback"]["dla_layers"] == 0:
        failures.append(f"expected layers on both engines: {over['fallback']}")
    if e_over["overlap_cycles"] <= 0 or overlapping_pairs(over) == 0:
        failures.append(f"overlap schedule: no DLA and PPU layer ran at once ({e_over})")
    if e_serial["overlap_cycles"] != 0 or overlapping_pairs(serial) != 0:
        failures.append(f"serial schedule: DLA and PPU layers overlapped ({e_serial})")
    if not over["cycles"] < serial["cycles"]:
        failures.append(f"overlap took {over['cycles']} cycles, serial {serial['cycles']}")
    if out_over != out_serial:
        failures.append("the two schedules computed different outputs")
    t_over, bad_over = account(over)
    t_serial, bad_serial = account(serial)
    failures += [f"overlap schedule: {b}" for b in bad_over]
    failures += [f"serial schedule: {b}" for b in bad_serial]
    if t_serial["dla_at_once"] or t_serial["ppu_at_once"]:
        failures.append(f"serial schedule: layers ran at once ({t_serial})")
    print(f"overlap: {over['cycles']} cycles, DLA busy {e_over['dla_busy_cycles']}, PPU busy "
          f"{e_over['ppu_busy_cycles']}, both {e_over['overlap_cycles']} "
          f"({overlapping_pairs(over)} DLA/PPU layer pairs at once); serial: {serial['cycles']} "
          f"cycles")
    names = (("dla", "DLA layers' cycles", 1), ("ppu", "PPU layers' cycles", 1),
             ("dla_at_once", "DLA layers at once", -1), ("ppu_at_once", "PPU layers at once", -1),
             ("both", "DLA and PPU at once", -1), ("idle", "idle (no layer running)", 1))
    print(f"{'term':28s} {'overlap':>9s} {'serial':>9s} {'saved':>9s}")
    for k, label, sign in names:
        print(f"{label:28s} {sign * t_over[k]:9d} {sign * t_serial[k]:9d} "
              f"{sign * (t_serial[k] - t_over[k]):9d}")
    print(f"{'cycles':28s} {over['cycles']:9d} {serial['cycles']:9d} "
          f"{serial['cycles'] - over['cycles']:9d}")
    for f in failures:
        print("FAIL:", f)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
