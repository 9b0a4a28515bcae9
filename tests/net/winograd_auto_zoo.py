#!/usr/bin/python3
"""winograd_auto_zoo.py OCTASIM WORKDIR [--budget B] [--candidate auto|on] MODEL ...

Issue 28's bar for the accuracy-aware Winograd choice: on a configuration with Winograd (nv_full),
`--winograd auto` is never worse than `--winograd off` by more than the budget in whole-network
INT8 output error. MODEL is either `zoo:NAME` (`octasim zoo NAME`: deterministic untrained
weights, the default random input; the expected output is the FP32 reference executor's, written
by `octasim net --reference-output`) or `DIR/NAME` (an exporter-zoo model: DIR/NAME.onnx,
DIR/NAME_input.npy, and PyTorch's DIR/NAME_output.npy as the expected output).

Per model, on nv_full at INT8 (one image, the cycle-level device: --timing-only):
  1. `octasim net --winograd off` and `--winograd <candidate>` (auto by default, with
     --winograd-budget B) each exit 0 (bit-exact with the quantized reference executor); their
     dequantized outputs (--output) give the relative L2 errors e_off and e_cand against the
     expected output, computed here in float64 (for an exporter-zoo model the off run's
     --reference-output must also be within 1e-4 of PyTorch's output);
  2. e_cand <= (1 + B) * e_off  -- the assertion of the bar;
  3. for auto: `octasim compile --winograd auto` writes layer_map.json (with --no-compile: net's
     layer table, whose errors have 3 significant digits, stands in for it); every layer it measured
     ("winograd_error": direct, winograd, budget, accepted) has budget B, accepted exactly when
     winograd <= (1 + B) * direct, and conv_mode "winograd" exactly when accepted; no unmeasured
     layer is in Winograd mode; `octasim net`'s layer table shows the same measured layers and
     decisions; and when no layer was accepted, auto's output equals off's bit for bit.
Over all models at least --min-measured layers (default 1) must have been measured, else the test
checks nothing about the choice (0 for networks with no candidate layer: LeNet-5's 5x5 kernels,
AlexNet's 13x13 3x3 outputs; there auto must equal off bit for bit).

`--candidate on` runs step 1-2 for `--winograd on` instead (no layer-map checks): a way to see the
assertion fail where Winograd everywhere costs more than the budget.
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import time

import numpy as np


def rel_l2(got, want):
    got = np.asarray(got, dtype=np.float64).reshape(-1)
    want = np.asarray(want, dtype=np.float64).reshape(-1)
    assert got.shape == want.shape, (got.shape, want.shape)
    return float(np.linalg.norm(got - want) / np.linalg.norm(want))


def run(cmd, log):
    with open(log, "w") as f:
        rc = subprocess.call(cmd, stdout=f, stderr=subprocess.STDOUT)
    with open(log) as f:
        text = f.read()
    return rc, text


# `net`'s layer table: `[direct: error Winograd 2.93%, direct 1.31%]` on a measured layer kept
# direct, `[Winograd: error ...]` or `[Winograd]` on one in Winograd mode.
ANNOTATION = re.compile(r"\[(direct|Winograd)(?:: error Winograd ([0-9.]+)%, direct ([0-9.]+)%)?\]$")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("octasim")
    ap.add_argument("workdir")
    ap.add_argument("models", nargs="+")
    ap.add_argument("--budget", type=float, default=0.1)
    ap.add_argument("--candidate", choices=["auto", "on"], default="auto")
    ap.add_argument("--min-measured", type=int, default=1)
    ap.add_argument("--no-compile", action="store_true",
                    help="take the decisions from net's layer table instead of compiling for "
                         "layer_map.json (the compile of a 224x224 network takes a minute)")
    args = ap.parse_args()
    os.makedirs(args.workdir, exist_ok=True)
    budget = args.budget
    failures = []
    measured_total = 0
    rows = []

    def fail(model, what):
        failures.append(f"{model}: {what}")
        print(f"FAIL {model}: {what}", flush=True)

    for spec in args.models:
        started = time.monotonic()
        failures_before = len(failures)
        cleanup = []  # large files to delete when the model passes
        if spec.startswith("zoo:"):
            name = spec[4:]
            model = os.path.join(args.workdir, f"{name}.onnx")
            rc, text = run([args.octasim, "zoo", name, "--out", model],
                           os.path.join(args.workdir, f"{name}.zoo.txt"))
            if rc != 0:
                fail(name, f"octasim zoo exited {rc}: {text.strip()}")
                continue
            inputs, expected = [], os.path.join(args.workdir, f"{name}.reference.npy")
            cleanup.append(model)
        else:
            name = os.path.basename(spec)
            model = f"{spec}.onnx"
            inputs, expected = ["--input", f"{spec}_input.npy"], f"{spec}_output.npy"
        common = [model, *inputs, "--config", "nv_full", "--precision", "int8"]
        out = {}
        texts = {}
        for mode in ("off", args.candidate):
            extra = ["--winograd", mode]
            if mode == "auto":
                extra += ["--winograd-budget", repr(budget)]
            if mode == "off":
                # zoo: the expected output; exporter zoo: checked against PyTorch's below.
                reference = (expected if spec.startswith("zoo:")
                             else os.path.join(args.workdir, f"{name}.reference.npy"))
                extra += ["--reference-output", reference]
            out[mode] = os.path.join(args.workdir, f"{name}.{mode}.npy")
            rc, texts[mode] = run([args.octasim, "net", *common, "--timing-only", "--no-progress",
                                   "--output", out[mode], *extra],
                                  os.path.join(args.workdir, f"{name}.{mode}.txt"))
            if rc != 0:
                fail(name, f"net --winograd {mode} exited {rc} (see {name}.{mode}.txt)")
        if len(out) != 2 or not all(os.path.exists(p) for p in out.values()):
            continue
        want = np.load(expected)
        if not spec.startswith("zoo:"):
            # The FP32 reference executor agrees with PyTorch (float32 roundings only).
            e_ref = rel_l2(np.load(reference), want)
            if not e_ref <= 1e-4:
                fail(name, f"--reference-output is {e_ref:.3g} off PyTorch's output")
        e_off = rel_l2(np.load(out["off"]), want)
        e_cand = rel_l2(np.load(out[args.candidate]), want)
        if not e_cand <= (1.0 + budget) * e_off:
            fail(name, f"--winograd {args.candidate} error {e_cand:.6g} > (1 + {budget}) x "
                       f"--winograd off error {e_off:.6g}")
        measured = accepted = 0
        shown = []  # net's layer table: (Winograd mode?, winograd error, direct error)
        for line in texts[args.candidate].splitlines():
            a = ANNOTATION.search(line)
            if a and a.group(2) is not None:
                shown.append((a.group(1) == "Winograd", float(a.group(2)) / 100,
                              float(a.group(3)) / 100))
            elif a and args.candidate == "auto":
                fail(name, f"a layer in Winograd mode without a measurement: {line.strip()}")
        if args.candidate == "auto" and args.no_compile:
            # The table prints 3 significant digits: the rule is checked up to that rounding.
            for wino, w, d in shown:
                limit = (1.0 + budget) * d
                if (wino and w > limit * 1.01) or (not wino and w < limit * 0.99):
                    fail(name, f"Winograd mode {wino} with errors Winograd {w}, direct {d}")
            measured, accepted = len(shown), sum(1 for d in shown if d[0])
            measured_total += measured
            if accepted == 0:
                with open(out["off"], "rb") as a, open(out["auto"], "rb") as b:
                    if a.read() != b.read():
                        fail(name, "no layer took Winograd mode, yet auto's output differs from off's")
        elif args.candidate == "auto":
            cdir = os.path.join(args.workdir, f"{name}.compiled")
            rc, text = run([args.octasim, "compile", *common, "--winograd", "auto",
                            "--winograd-budget", repr(budget), "--out", cdir],
                           os.path.join(args.workdir, f"{name}.compile.txt"))
            if rc != 0:
                fail(name, f"compile exited {rc}")
                continue
            with open(os.path.join(cdir, "layer_map.json")) as f:
                layer_map = json.load(f)
            shutil.copy(os.path.join(cdir, "layer_map.json"),
                        os.path.join(args.workdir, f"{name}.layer_map.json"))
            cleanup.append(cdir)  # the trace and its .dat files: tens of MB
            layers = layer_map["layers"] if isinstance(layer_map, dict) else layer_map
            decisions = []  # (winograd mode?, measured winograd error, direct error) per conv
            for i, layer in enumerate(layers):
                mode = layer.get("conv_mode")
                m = layer.get("winograd_error")
                if m is None:
                    if mode == "winograd":
                        fail(name, f"layer {i} in Winograd mode without a measurement")
                    continue
                measured += 1
                rule = m["winograd"] <= (1.0 + budget) * m["direct"]
                accepted += bool(m["accepted"])
                if abs(m["budget"] - budget) > 1e-12:
                    fail(name, f"layer {i}: budget {m['budget']}, asked {budget}")
                if bool(m["accepted"]) != rule:
                    fail(name, f"layer {i}: accepted {m['accepted']} but winograd {m['winograd']} "
                               f"vs (1 + {budget}) x direct {m['direct']}")
                if (mode == "winograd") != bool(m["accepted"]):
                    fail(name, f"layer {i}: conv_mode {mode}, accepted {m['accepted']}")
                decisions.append((mode == "winograd", m["winograd"], m["direct"]))
            # The run's layer table decided the same (net and compile calibrate alike).
            if [d[0] for d in shown] != [d[0] for d in decisions] or any(
                    abs(s[1] - d[1]) > 0.006 * d[1] + 1e-5 or abs(s[2] - d[2]) > 0.006 * d[2] + 1e-5
                    for s, d in zip(shown, decisions)):
                fail(name, f"net's layer table {shown} differs from layer_map.json {decisions}")
            if accepted == 0:
                with open(out["off"], "rb") as a, open(out["auto"], "rb") as b:
                    if a.read() != b.read():
                        fail(name, "no layer took Winograd mode, yet auto's output differs from off's")
            measured_total += measured
        rows.append((name, measured, accepted, e_off, e_cand, time.monotonic() - started))
        if len(failures) == failures_before:
            for path in cleanup:
                if os.path.isdir(path):
                    shutil.rmtree(path)
                elif os.path.exists(path):
                    os.remove(path)

    print(f"\nbudget {budget}: --winograd {args.candidate} against --winograd off, INT8, nv_full")
    print(f"{'model':<22} {'measured':>8} {'accepted':>8} {'e_off':>10} {'e_' + args.candidate:>10} "
          f"{'ratio':>7} {'seconds':>7}")
    for name, measured, accepted, e_off, e_cand, secs in rows:
        ratio = e_cand / e_off if e_off > 0 else float("nan")
        print(f"{name:<22} {measured:>8} {accepted:>8} {e_off:>10.6f} {e_cand:>10.6f} {ratio:>7.4f} "
              f"{secs:>7.1f}")
    if args.candidate == "auto" and measured_total < args.min_measured:
        fail("all", f"{measured_total} layer(s) measured, expected at least {args.min_measured}")
    if len(rows) != len(args.models):
        fail("all", f"{len(args.models) - len(rows)} model(s) did not run")
    print(f"\n{len(failures)} failure(s)", flush=True)
    if failures:
        print(f"winograd_auto_zoo: {len(failures)} failure(s), the first: {failures[0]}",
              file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
