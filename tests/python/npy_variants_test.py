#!/usr/bin/python3
"""Every .npy variant NumPy writes, read by `octasim clip`: each dtype (int8..int64,
uint8..uint64, float16/32/64, bool), both byte orders, C and Fortran order, format versions
1.0, 2.0 and 3.0, and arrays of .npz archives (np.savez stored, np.savez_compressed deflated).

The values octasim read are recovered exactly from `clip --method max --per-vector 1 --json`:
per element, the signed max-scaling clip is |x| and the unsigned one max(x, 0), so
x = 2 * max(x, 0) - |x|. They must equal NumPy's own conversion of the same array,
a.astype(float32) in C order; the reported dtype and shape must equal NumPy's.

usage: npy_variants_test.py OCTASIM_BINARY
"""
import json
import os
import subprocess
import sys
import tempfile

try:
    import numpy as np
except ImportError:
    print("SKIP: NumPy (Debian python3-numpy) is not installed")
    sys.exit(77)

OCTASIM = sys.argv[1]
failures = []
checked = 0


def clip_json(path, *args):
    r = subprocess.run([OCTASIM, "clip", path, "--method", "max", "--json", *args],
                       capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"octasim clip {path} {' '.join(args)} exited {r.returncode}: "
                           f"{r.stderr.strip()}")
    return json.loads(r.stdout)


def values_read(path, rank):
    """The values octasim read from `path`, in C order, with its dtype and shape."""
    grouping = ["--per-vector", "1"] if rank > 0 else []
    signed = clip_json(path, *grouping)
    unsigned = clip_json(path, "--unsigned", *grouping)
    mag = np.array([g["clip"] for g in signed["groups"]], dtype=np.float64)
    pos = np.array([g["clip"] for g in unsigned["groups"]], dtype=np.float64)
    return 2 * pos - mag, signed["dtype"], signed["shape"]


def check(label, path, a):
    global checked
    checked += 1
    try:
        got, dtype, shape = values_read(path, a.ndim)
    except RuntimeError as e:
        failures.append(f"{label}: {e}")
        return
    want = np.ascontiguousarray(a).astype(np.float32).ravel(order="C").astype(np.float64)
    if dtype != a.dtype.name:
        failures.append(f"{label}: dtype {dtype}, NumPy says {a.dtype.name}")
    if list(shape) != list(a.shape):
        failures.append(f"{label}: shape {shape}, NumPy says {list(a.shape)}")
    if got.shape != want.shape or not np.array_equal(got, want):
        bad = np.flatnonzero(got != want) if got.shape == want.shape else []
        first = f" (first at {bad[0]}: {got[bad[0]]} vs {want[bad[0]]})" if len(bad) else ""
        failures.append(f"{label}: values differ from NumPy's astype(float32){first}")


def sample(dtype, shape, rng):
    """Finite, nonzero-rich data of `dtype` covering its range's ends."""
    dt = np.dtype(dtype)
    n = int(np.prod(shape))
    if dt.kind == "b":
        v = rng.integers(0, 2, n).astype(bool)
    elif dt.kind in "iu":
        info = np.iinfo(dt)
        v = rng.integers(info.min, info.max, n, dtype=dt.newbyteorder("="), endpoint=True)
        v[:2] = [info.min, info.max][: min(2, n)]
    else:
        v = (rng.standard_normal(n) * 3.0).astype(dt.newbyteorder("="))
        if dt.itemsize == 8 and n > 1:
            v[1] = 1e30  # beyond float16, within float32: rounds like NumPy's astype
    return v.reshape(shape).astype(dt)


def main():
    rng = np.random.default_rng(17)
    tmp = tempfile.mkdtemp(prefix="octasim_npy_")
    kinds = ["i1", "i2", "i4", "i8", "u1", "u2", "u4", "u8", "f2", "f4", "f8", "b1"]
    k = 0
    for kind in kinds:
        for order_char in "<>":
            # '|' is NumPy's descr for one-byte types; '<' and '>' give the same array then.
            dtype = np.dtype(order_char + kind)
            a = sample(dtype, (3, 4, 5), rng)
            for layout in ("C", "F"):
                arr = np.asfortranarray(a) if layout == "F" else np.ascontiguousarray(a)
                for version in ((1, 0), (2, 0), (3, 0)):
                    k += 1
                    path = os.path.join(tmp, f"a{k}.npy")
                    with open(path, "wb") as f:
                        np.lib.format.write_array(f, arr, version=version)
                    with open(path, "rb") as f:  # the file really is what the label says
                        v = np.lib.format.read_magic(f)
                        hdr = np.lib.format._read_array_header(f, v)
                    if v != version or hdr[1] != (layout == "F") or hdr[2] != dtype:
                        failures.append(f"{path}: NumPy wrote {v} {hdr}, not the variant meant")
                    check(f"{dtype.str} {layout}-order v{version[0]}.{version[1]}", path, arr)
    # Other ranks, np.save's own choice of version, a transposed view (Fortran order on disk).
    for shape in [(), (7,), (2, 3, 4, 5)]:
        a = sample("<f4", shape, rng)
        path = os.path.join(tmp, f"rank{len(shape)}.npy")
        np.save(path, a)
        check(f"float32 shape {shape}", path, a)
    t = sample("<f8", (6, 5), rng).T
    np.save(os.path.join(tmp, "transposed.npy"), t)
    check("transposed view", os.path.join(tmp, "transposed.npy"), t)
    # .npz archives: every member by name, stored and deflated; a lone member by the file name.
    arrays = {"w": sample("<f4", (4, 3), rng), "idx": sample("<i8", (5,), rng),
              "fort": np.asfortranarray(sample(">f2", (3, 2), rng)), "mask": sample("|b1", (2, 2), rng)}
    for saver in (np.savez, np.savez_compressed):
        path = os.path.join(tmp, f"{saver.__name__}.npz")
        saver(path, **arrays)
        for name, a in arrays.items():
            check(f"{saver.__name__} member {name}", f"{path}:{name}", a)
        check(f"{saver.__name__} member w.npy", f"{path}:w.npy", arrays["w"])
        lone = os.path.join(tmp, f"lone_{saver.__name__}.npz")
        saver(lone, only=arrays["w"])
        check(f"{saver.__name__} lone member", lone, arrays["w"])

    for f in failures:
        print("FAIL:", f)
    print(f"{checked - len(failures)} of {checked} .npy/.npz variants read as NumPy wrote them")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
