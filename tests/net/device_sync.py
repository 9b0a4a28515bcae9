#!/usr/bin/env python3
"""Device-side ordering of the PPU (`--sync device`): the same network under `--schedule overlap`
with `--sync host` (the host awaits the DLA's interrupts before ringing a PPU channel) and with
`--sync device` (the host pushes each PPU layer at once behind SYNCPT_WAITs on the completion
counts of the layers it depends on) computes the same outputs, byte for byte, in fewer cycles,
with fewer cycles in which no layer runs (network.engines.idle_cycles). Both reports follow
sim/report/report.schema.json. `--sync device` with `--schedule serial` is refused with one line.

usage: device_sync.py OCTASIM SCHEMA.json MODEL.onnx INPUT.npy WORKDIR [net options...]
"""

import json
import os
import subprocess
import sys

import jsonschema


def run(octasim, schema, model, inp, workdir, sync, extra):
    report = os.path.join(workdir, f"sync_{sync}.json")
    out = os.path.join(workdir, f"sync_{sync}.npy")
    cmd = [octasim, "net", model, "--input", inp, "--no-progress", "--schedule", "overlap",
           "--sync", sync, "--report", report, "--output", out] + extra
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    with open(report) as f:
        data = json.load(f)
    errors = sorted(jsonschema.Draft202012Validator(schema).iter_errors(data), key=str)
    if errors:
        sys.exit(f"FAIL: {report} does not follow the schema: {errors[0]}")
    with open(out, "rb") as f:
        return data["network"], f.read()


def main():
    if len(sys.argv) < 6:
        sys.exit(__doc__)
    octasim, schema_path, model, inp, workdir = sys.argv[1:6]
    extra = sys.argv[6:]
    with open(schema_path) as f:
        schema = json.load(f)
    jsonschema.Draft202012Validator.check_schema(schema)
    os.makedirs(workdir, exist_ok=True)
    host, out_host = run(octasim, schema, model, inp, workdir, "host", extra)
    device, out_device = run(octasim, schema, model, inp, workdir, "device", extra)
    failures = []
    if host["fallback"]["ppu_layers"] == 0 or host["fallback"]["dla_layers"] == 0:
        failures.append(f"expected layers on both engines: {host['fallback']}")
    if out_host != out_device:
        failures.append("host and device sync computed different outputs")
    if not device["cycles"] < host["cycles"]:
        failures.append(f"device sync took {device['cycles']} cycles, host sync {host['cycles']}")
    e_host, e_dev = host["engines"], device["engines"]
    if not e_dev["idle_cycles"] < e_host["idle_cycles"]:
        failures.append(f"idle cycles: device sync {e_dev['idle_cycles']}, host sync "
                        f"{e_host['idle_cycles']}")
    for name, net in (("host", host), ("device", device)):
        e = net["engines"]
        busy = e["dla_busy_cycles"] + e["ppu_busy_cycles"] - e["overlap_cycles"]
        if busy + e["idle_cycles"] != net["cycles"]:
            failures.append(f"{name}: busy {busy} + idle {e['idle_cycles']} != {net['cycles']}")
    refused = subprocess.run([octasim, "net", model, "--input", inp, "--no-progress",
                              "--schedule", "serial", "--sync", "device"] + extra,
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if refused.returncode == 0 or "--sync device" not in refused.stderr:
        failures.append(f"--sync device --schedule serial: exit {refused.returncode}, "
                        f"{refused.stderr.strip()!r}")
    for name, net in (("host", host), ("device", device)):
        e = net["engines"]
        print(f"{name} sync: {net['cycles']} cycles, idle {e['idle_cycles']}, DLA busy "
              f"{e['dla_busy_cycles']}, PPU busy {e['ppu_busy_cycles']}, both "
              f"{e['overlap_cycles']}")
    for f in failures:
        print("FAIL:", f)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
