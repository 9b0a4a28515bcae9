#!/usr/bin/env python3
"""Checks `octasim run`'s JSON report and summary of the PPU trace (tests/ppu/CMakeLists.txt).

The trace (tests/ppu/ppu_device_test.cpp) runs on soc_small: an SDP layer (DLA), then on PPU
channel 1 an INT8 GEMM 64x16x8 (K = 8 is not a multiple of INT8's 16: padded) and an FP16 GEMM
20x36x64 (M, N not multiples of 8: padded). soc_small has 2 memory partitions with 2 L2 slices
each (sim/configs/soc_small.json).

usage: ppu_report_check.py REPORT.json SUMMARY.txt SCHEMA.json
"""
import json
import sys

import jsonschema


def fail(msg):
    sys.exit(f"FAIL: {msg}")


def main():
    report = json.load(open(sys.argv[1]))
    summary = open(sys.argv[2]).read()
    jsonschema.validate(report, json.load(open(sys.argv[3])))
    if not report["result"]["passed"] or report["result"]["checks_passed"] != 2:
        fail(f"result {report['result']}")
    if [l["engine"] for l in report["layers"]] != ["SDP"]:
        fail(f"layers {[l['engine'] for l in report['layers']]}, expected the one SDP layer")
    kernels = report["ppu"]["kernels"]
    want = [("gemm", "int8_int32", 64, 16, 8, 64 * 16 * 8), ("gemm", "fp16_fp32", 20, 36, 64, 20 * 36 * 64)]
    got = [(k["kind"], k["type"], k["m"], k["n"], k["k"], k["macs"]) for k in kernels]
    if got != want:
        fail(f"kernels {got}, expected {want}")
    for k in kernels:
        if k["channel"] != 1 or not k["finished"] or "padded" not in k["path"]:
            fail(f"kernel {k}")
        if k["cycles"] != k["end_cycle"] - k["start_cycle"] or k["cycles"] <= 0:
            fail(f"kernel cycles {k}")
    # The INT8 kernel reads the SDP's output: it starts after the SDP layer ended.
    if kernels[0]["start_cycle"] < report["layers"][0]["end_cycle"]:
        fail("the INT8 GEMM started before the SDP layer it depends on ended")
    if kernels[1]["start_cycle"] < kernels[0]["end_cycle"]:
        fail("channel 1's kernels overlap (stream order)")
    mem = report["memory"]
    if len(mem["l2_slices"]) != 4 or len(mem["dram_channels"]) != 2:
        fail(f"{len(mem['l2_slices'])} L2 slices, {len(mem['dram_channels'])} DRAM channels")
    if sum(s["hits"] + s["misses"] for s in mem["l2_slices"]) == 0:
        fail("no L2 accesses")
    for needle in ("PPU kernels (1 GPCs, 2 SMs x 4 tensor cores):", "ch1 gemm int8_int32 64x16x8",
                   "L2 slice 0:", "DRAM channel 1:", "row-buffer hit rate", "ppu.frontend."):
        if needle not in summary:
            fail(f"the run summary has no '{needle}'")
    print(f"PASS: 2 PPU kernels after the SDP layer, {len(mem['l2_slices'])} L2 slices")


if __name__ == "__main__":
    main()
