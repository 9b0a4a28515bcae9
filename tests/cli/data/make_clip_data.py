#!/usr/bin/env python3
"""Writes the tensor files the `octasim clip` CLI tests read (standard library only).

Run from this directory: python3 make_clip_data.py. The files are committed; this script
documents exactly what they hold.
"""
import math
import struct


def npy(path, shape, descr, values, fortran=False, version=1):
    shp = "(" + ", ".join(str(s) for s in shape) + ("," if len(shape) == 1 else "") + ")"
    header = "{'descr': '%s', 'fortran_order': %s, 'shape': %s, }" % (
        descr, "True" if fortran else "False", shp)
    pre = 10 if version == 1 else 12
    header += " " * ((64 - (pre + len(header) + 1) % 64) % 64) + "\n"
    code = {"f2": "e", "f4": "f", "f8": "d", "i4": "i"}[descr[1:]]
    order = ">" if descr[0] == ">" else "<"
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY" + bytes([version, 0]))
        f.write(struct.pack("<H" if version == 1 else "<I", len(header)))
        f.write(header.encode("latin1"))
        for v in values:
            f.write(struct.pack(order + code, v))


def wave(n, scale=1.0):
    return [scale * math.sin(0.7 * i) * (1 + i % 5) for i in range(n)]


# {1, 1, 1, 4} and zeros: hand-computed OCTAV fixed points 64/17 (B=2 signed) and 256/65
# (B=2 unsigned).
npy("clip_hand.npy", [8], "<f4", [1, 1, 1, 4, 0, 0, 0, 0])
npy("clip_f16.npy", [2, 3, 4], "<f2", wave(24, 0.5))
npy("clip_f64.npy", [3, 5], "<f8", wave(15, 2.0), version=2)
npy("clip_be.npy", [2, 2], ">f4", [1.0, -2.0, 0.5, 3.0])
npy("clip_zeros.npy", [4], "<f4", [0, 0, 0, 0])
npy("clip_empty.npy", [0, 3], "<f4", [])
npy("clip_nan.npy", [2, 3], "<f4", [1, 2, 3, float("nan"), 5, 6])
npy("clip_int32.npy", [4], "<i4", [1, 2, 3, 4])
npy("clip_fortran.npy", [2, 2], "<f4", [1, 2, 3, 4], fortran=True)
npy("clip_truncated.npy", [10], "<f4", [1.0] * 10)
with open("clip_truncated.npy", "r+b") as f:  # drop the last 3 of the 10 values
    f.seek(0, 2)
    f.truncate(f.tell() - 12)
with open("clip_bad_magic.npy", "wb") as f:
    f.write(b"PK\x03\x04 this is a zip archive, not an .npy file" + bytes(40))
with open("clip_raw.f32", "wb") as f:
    for v in wave(24):
        f.write(struct.pack("<f", v))
