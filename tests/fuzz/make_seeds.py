#!/usr/bin/python3
"""Writes the generated part of the fuzz seed corpora
(tests/fuzz/corpus/{npy,ppu,ppu_node,calibration}): small .npy/.npz files of each dtype and layout
the reader accepts, PPU push buffers that launch one kernel of each kind, PPU node kernel images
(models/ops/ppu_node.hpp's format), and calibration tables in both entry forms. The other seeds are copied
from ../shared (traces, .dat, .spec) and sim/configs. Run from anywhere; rewrites the files."""
import io
import json
import os
import struct
import zipfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))


def out(target, name, data):
    d = os.path.join(HERE, "corpus", target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


def npy_bytes(a, version=None):
    b = io.BytesIO()
    if version is None:
        np.save(b, a)
    else:
        np.lib.format.write_array(b, a, version=version)
    return b.getvalue()


def npy_seeds():
    x = np.arange(12, dtype=np.float32).reshape(3, 4) / 4 - 1
    out("npy", "f32.npy", npy_bytes(x))
    out("npy", "f16.npy", npy_bytes(x.astype(np.float16)))
    out("npy", "f64_be.npy", npy_bytes(x.astype(">f8")))
    out("npy", "fortran.npy", npy_bytes(np.asfortranarray(x)))
    out("npy", "i8.npy", npy_bytes(np.arange(-4, 4, dtype=np.int8)))
    out("npy", "u16_be.npy", npy_bytes(np.arange(6, dtype=">u2").reshape(2, 3)))
    out("npy", "i64.npy", npy_bytes(np.array([1, -2, 3], dtype=np.int64)))
    out("npy", "bool.npy", npy_bytes(np.array([True, False, True])))
    out("npy", "scalar.npy", npy_bytes(np.float32(2.5)))
    out("npy", "v2.npy", npy_bytes(x, version=(2, 0)))
    out("npy", "v3.npy", npy_bytes(x, version=(3, 0)))
    for name, compressed in (("stored.npz", False), ("deflated.npz", True)):
        b = io.BytesIO()
        (np.savez_compressed if compressed else np.savez)(b, a=x, b=np.arange(3, dtype=np.int8))
        out("npy", name, b.getvalue())


BASE = 0x80000000


def words(*ws):
    return b"".join(struct.pack("<I", w & 0xFFFFFFFF) for w in ws)


def push_buffer(desc):
    """NOP, REG_WRITE, LAUNCH of a descriptor at +0x80, WAIT_DLA, SEM_RELEASE, MEMCPY, INTERRUPT;
    the descriptor (32 words) at +0x80; operands from +0x100 (small values)."""
    pb = words(0x00000000, 0x01000002, 0x9038, 1, 0x03000002, BASE + 0x80, 0,
               0x02000001, 1, 0x05000003, BASE + 0x3F0, 0, 1,
               0x06000005, BASE + 0x380, 0, BASE + 0x100, 0, 16, 0x07000000)
    assert len(pb) <= 0x80
    pb = pb.ljust(0x80, b"\0")
    desc = list(desc) + [0] * (32 - len(desc))
    pb += words(*desc)
    ops = np.linspace(-2, 2, 192).astype(np.float16).tobytes()
    pb = pb.ljust(0x100, b"\0") + ops
    return pb.ljust(0x400, b"\0")[:0x400]


def ppu_seeds():
    a, b, c, d = BASE + 0x100, BASE + 0x180, BASE + 0x200, BASE + 0x300
    # GEMM fp16_fp32 8x8x8, C present, default tiles.
    out("ppu", "gemm.pb", push_buffer([1, 0, 1, 8, 8, 8, a, 0, b, 0, c, 0, d, 0]))
    # int8 GEMM, padded shape, fallback policy.
    out("ppu", "gemm_int8.pb", push_buffer([1, 3, 1 << 12, 5, 3, 7, a, 0, b, 0, 0, 0, d, 0]))
    # split-precision FP32 GEMM (bf16, 3 parts, 6 products).
    out("ppu", "gemm_split.pb",
        push_buffer([1, 5, 1 << 16, 4, 4, 4, a, 0, b, 0, 0, 0, d, 0, 0, 0, 0, 0, 3, 6, 8]))
    # conv N=1 H=W=4 C=4 K=4 R=S=3 stride 1 pad 1.
    out("ppu", "conv.pb",
        push_buffer([2, 0, 1, 1, 4, 4, 4, 4, 3, 3, 1, 1, 1, 1, a, 0, b, 0, c, 0, d, 0]))
    out("ppu", "elementwise.pb", push_buffer([3, 0, 16, 0, a, 0, b, 0, d, 0]))
    out("ppu", "relu.pb", push_buffer([3, 2, 16, 0, a, 0, 0, 0, d, 0]))
    out("ppu", "reduce.pb", push_buffer([4, 4, 8, 0, a, 0, d, 0]))
    out("ppu", "softmax.pb",
        push_buffer([5, 2, 0, 4, 2, 8, 32, 0, a, 0, 0x80, 0x100, d, 0, 0x80, 0x100]))
    # SYNCPT_WAIT (syncpoint 0, count 1) before an element-wise kernel's LAUNCH and INTERRUPT.
    pb = bytearray(push_buffer([3, 0, 16, 0, a, 0, b, 0, d, 0]))
    pb[0:0x1C] = words(0x08000002, 0, 1, 0x03000002, BASE + 0x80, 0, 0x07000000)
    out("ppu", "syncpt_wait.pb", bytes(pb))


def node_str(s):
    b = s.encode()
    return struct.pack("<I", len(b)) + b


def node_surface(storage, addr, shape, w, h, c, atom, rows=0, cmap=(), step=1.0):
    b = struct.pack("<BQI", storage, addr, len(shape)) + b"".join(struct.pack("<q", d) for d in shape)
    b += struct.pack("<6I", w, h, c, w * atom, h * w * atom, atom) + struct.pack("<BI", rows, len(cmap))
    return b + b"".join(struct.pack("<I", x) for x in cmap) + struct.pack("<d", step)


def node_image(op, name, attrs, inputs, outputs):
    b = struct.pack("<II", 0x444F4E50, 1) + node_str(op) + node_str(name) + struct.pack("<q", 13)
    b += struct.pack("<I", len(attrs)) + b"".join(attrs)
    b += struct.pack("<I", len(inputs))
    for i in inputs:
        b += b"\0" if i is None else b"\1" + i
    return b + struct.pack("<I", len(outputs)) + b"".join(outputs)


def ppu_node_seeds():
    # Erf on a 1 x 21 x 2 x 2 FP16 surface in 32-byte atoms.
    out("ppu_node", "erf.bin", node_image("Erf", "erf", [], [node_surface(0, 0x1000, [1, 21, 2, 2], 2, 2, 21, 32)],
                                          [node_surface(0, 0x2000, [1, 21, 2, 2], 2, 2, 21, 32)]))
    # Gemm of INT8 rows (step 0.5, channel map) and a dense FP32 constant; every attribute kind
    # (keys in sorted order, as encode_node writes them), an omitted input.
    attrs = [node_str("alpha") + struct.pack("<Bf", 1, 0.5),
             node_str("mode") + struct.pack("<B", 2) + node_str("x"),
             node_str("perm") + struct.pack("<BIqq", 3, 2, 1, 0),
             node_str("scales") + struct.pack("<BIf", 4, 1, 2.0),
             node_str("transB") + struct.pack("<Bq", 0, 1),
             node_str("value") + struct.pack("<BBIqf", 5, 0, 1, 1, 3.0)]
    dense = struct.pack("<BQIqq", 2, 0x3000, 2, 4, 3)
    out("ppu_node", "gemm_int8.bin",
        node_image("Gemm", "", attrs,
                   [node_surface(1, 0x1000, [2, 4], 1, 2, 8, 8, rows=1, cmap=(3, 0, 1, 2), step=0.5),
                    dense, None],
                   [node_surface(0, 0x4000, [2, 3], 1, 2, 3, 8, rows=1)]))


def calibration_seeds():
    octa = {"input": {"clip": 2.5, "bits": 8, "unsigned": False, "min": -2.0, "max": 2.5,
                      "method": "octav"},
            "/conv1/Conv_output_0": {"clip": 6.0, "bits": 4, "unsigned": True, "min": 0,
                                     "max": 7.5, "method": "max"}}
    out("calibration", "octasim.json", json.dumps(octa, indent=1).encode())
    nv = {"data": {"scale": 0.5, "min": -60.0, "max": 63.0, "offset": 0},
          "conv1": {"scale": 0.25, "min": 0, "max": 31.75}}
    out("calibration", "nvdla.json", json.dumps(nv).encode())


npy_seeds()
ppu_seeds()
ppu_node_seeds()
calibration_seeds()
