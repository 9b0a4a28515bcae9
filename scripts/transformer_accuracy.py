#!/usr/bin/python3
"""The transformers' accuracy table (README, "Mixed precision"): relative L2 error of the output
on soc_large at fp16, int8 (max and OCTAV clips) and mixed (max and OCTAV clips).

  scripts/transformer_accuracy.py BUILD/sim/app/octasim

The exporter zoo's tiny_vit and bert_encoder against PyTorch's outputs stored beside the .onnx;
the model zoo's vit_tiny and bert_tiny (`octasim zoo`) against the FP32 reference executor on the
default input (one deterministic random image in [0, 1)). Every run is on the cycle-level SoC
(the PPU has no functional model) and checked bit-exact against the quantized reference executor
by `octasim net` itself (exit 0).
"""
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ZOO = os.path.join(HERE, "..", "models", "networks", "exporter_zoo")
MODES = [("fp16", "fp16", "max"), ("int8 max", "int8", "max"), ("int8 OCTAV", "int8", "octav"),
         ("mixed max", "mixed", "max"), ("mixed OCTAV", "mixed", "octav")]


def run(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"{' '.join(cmd)}: exit {r.returncode}\n{r.stdout}{r.stderr}")
    return r.stdout


def error(octasim, model, args, expect, precision, calibration):
    out = run([octasim, "net", model, *args, "--config", "soc_large", "--no-cvsram",
               "--precision", precision, "--calibration", calibration, "--no-progress",
               "--expect", expect])
    if "1 of 1 images bit-exact" not in out:
        sys.exit(f"{model} {precision} {calibration}: not bit-exact\n{out}")
    m = re.search(r"relative L2 error ([0-9.eE+-]+)", out)
    if not m:
        sys.exit(f"{model} {precision}: no relative L2 error in\n{out}")
    return float(m.group(1))


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    octasim = sys.argv[1]
    tmp = tempfile.mkdtemp(prefix="octasim-accuracy-")
    rows = []
    for name in ["tiny_vit", "bert_encoder"]:
        model = os.path.join(ZOO, name + ".onnx")
        args = ["--input", os.path.join(ZOO, name + "_input.npy")]
        expect = os.path.join(ZOO, name + "_output.npy")
        rows.append((name + " (PyTorch)", [error(octasim, model, args, expect, p, c)
                                           for _, p, c in MODES]))
    for name in ["vit_tiny", "bert_tiny"]:
        model = os.path.join(tmp, name + ".onnx")
        run([octasim, "zoo", name, "--out", model])
        ref = os.path.join(tmp, name + "_fp32.npy")
        run([octasim, "net", model, "--config", "soc_large", "--no-cvsram", "--precision", "fp16",
             "--no-progress", "--reference-output", ref])
        rows.append((name + " (FP32 reference)", [error(octasim, model, [], ref, p, c)
                                                   for _, p, c in MODES]))
    print("| model (vs) | " + " | ".join(m for m, _, _ in MODES) + " |")
    print("|---" * (len(MODES) + 1) + "|")
    for name, errs in rows:
        print(f"| {name} | " + " | ".join(f"{100 * e:.3g}%" for e in errs) + " |")


if __name__ == "__main__":
    main()
