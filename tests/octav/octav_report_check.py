#!/usr/bin/env python3
"""Checks the OCTAV layer in `octasim run`'s JSON report and summary (tests/octav/CMakeLists.txt).

The trace is the quantized convolution of tests/octav/quantized_conv_case.hpp on nv_full: OCTAV
reads A = 12 x 10 x 16 INT16 in 32-byte atoms (one surface, 120 atoms of 16 elements, 3840
bytes). The input fits octav_buffer_bytes (16384), so only pass 0 reads DRAM, and every
iteration takes 120 * 16 / octav_elements_per_cycle (8) = 240 datapath cycles plus
octav_divide_latency (24) for its one group: 264 cycles. Derived by hand from nv_full.json.

usage: octav_report_check.py REPORT.json SUMMARY.txt
"""
import json
import sys


def main():
    report = json.load(open(sys.argv[1]))
    summary = open(sys.argv[2]).read()
    layers = [l for l in report["layers"] if l["engine"] == "OCTAV"]
    if len(layers) != 1:
        sys.exit(f"FAIL: {len(layers)} OCTAV layers in the report, expected 1")
    c = layers[0]["counters"]
    iterations = c["dla.OCTAV.iterations"]
    if iterations < 2 or c["dla.OCTAV.passes"] != iterations + 1:
        sys.exit(f"FAIL: iterations {iterations}, passes {c['dla.OCTAV.passes']}")
    if c["dla.OCTAV.iteration_cycles"] != iterations * (120 * 16 // 8 + 24):
        sys.exit(f"FAIL: iteration_cycles {c['dla.OCTAV.iteration_cycles']}, expected "
                 f"{iterations} * 264")
    if c["dla.OCTAV.bytes_read"] != 3840 or c["dla.OCTAV.elements"] != 3840 * (iterations + 1) // 2:
        sys.exit(f"FAIL: bytes_read {c['dla.OCTAV.bytes_read']}, elements {c['dla.OCTAV.elements']}")
    total = c["dla.OCTAV.stats_pass_cycles"] + c["dla.OCTAV.iteration_cycles"]
    if layers[0]["cycles"] != total + 8:  # op_start_latency
        sys.exit(f"FAIL: layer cycles {layers[0]['cycles']}, passes add up to {total} + 8")
    for needle in ("OCTAV group 0:", "dla.OCTAV.iteration_cycles", "OCTAV.D_PERF_CYCLES="):
        if needle not in summary:
            sys.exit(f"FAIL: the run summary has no '{needle}'")
    print(f"PASS: OCTAV {iterations} iterations of 264 cycles, layer {layers[0]['cycles']} cycles")


if __name__ == "__main__":
    main()
