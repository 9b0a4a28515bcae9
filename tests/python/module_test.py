#!/usr/bin/python3
"""The octasim Python module (PYTHONPATH=build/python) against the octasim CLI and independent
NumPy derivations.

usage: module_test.py CHECK OCTASIM_BINARY WORK_DIR [NVDLA_DIR]
  clip      octasim.clip on NumPy arrays equals `octasim clip --json` on the .npy NumPy wrote
            for the same arrays: per tensor, per channel, per vector; C and Fortran order;
            float16/32/64 and int8; every method
  quantize  octasim.quantize / octasim.mse equal OCTAV eq. 3 / eq. 1 computed with NumPy
  config    octasim.config equals the built-in JSON files; dicts round-trip; bad keys raise
  run       octasim.run on an NVDLA trace returns the CLI's --report JSON; twice in one process,
            from another thread while this one runs, with a config dict; a bad trace raises
            octasim.Error with the CLI's message
  net       octasim.net / octasim.compile on the zoo's LeNet-5 equal `octasim net` / `compile`
"""
import json
import os
import subprocess
import sys
import threading

try:
    import numpy as np
except ImportError:
    print("SKIP: NumPy (Debian python3-numpy) is not installed")
    sys.exit(77)

import octasim

CHECK, OCTASIM, WORK = sys.argv[1], sys.argv[2], sys.argv[3]
NVDLA = sys.argv[4] if len(sys.argv) > 4 else ""
os.makedirs(WORK, exist_ok=True)
failures = []
checks = 0


def expect(cond, what):
    global checks
    checks += 1
    if not cond:
        failures.append(what)


def cli(*args, ok=(0,)):
    r = subprocess.run([OCTASIM, *args], capture_output=True, text=True)
    if r.returncode not in ok:
        raise RuntimeError(f"octasim {' '.join(args)}: exit {r.returncode}: {r.stderr.strip()}")
    return r


# ---------------------------------------------------------------------------------------------

def check_clip():
    rng = np.random.default_rng(1717)
    base = rng.standard_normal((6, 5, 8)) * np.linspace(0.5, 4.0, 8)
    arrays = {
        "f32_c": base.astype(np.float32),
        "f64_fortran": np.asfortranarray(base),
        "f16": base.astype(np.float16),
        "f32_transposed": base.astype(np.float32).transpose(2, 0, 1),  # a strided view
        "i8": np.clip(np.round(base * 20), -128, 127).astype(np.int8),
        "relu": np.maximum(base, 0).astype(np.float32),
    }
    expect(not arrays["f64_fortran"].flags.c_contiguous, "the Fortran array is C-contiguous")
    groupings = [({}, []), ({"per_channel": 0}, ["--per-channel", "0"]),
                 ({"per_channel": -1}, ["--per-channel", "-1"]),
                 ({"per_vector": 3}, ["--per-vector", "3"])]
    methods = [({}, []), ({"method": "max"}, ["--method", "max"]),
               ({"method": "percentile", "percentile": 99.0},
                ["--method", "percentile", "--percentile", "99"]),
               ({"method": "mse-hist", "bits": 8}, ["--method", "mse-hist", "--bits", "8"]),
               ({"method": "bruteforce", "candidates": 50},
                ["--method", "bruteforce", "--candidates", "50"]),
               ({"bits": 3, "unsigned": True, "init": "zero", "max_iter": 30, "tol": 1e-6},
                ["--bits", "3", "--unsigned", "--init", "zero", "--max-iter", "30",
                 "--tol", "1e-6"])]
    for name, a in arrays.items():
        path = os.path.join(WORK, f"clip_{name}.npy")
        np.save(path, a)  # NumPy writes Fortran order for the F-contiguous array
        for gk, ga in groupings:
            for mk, ma in methods:
                label = f"{name} {ga} {ma}"
                want = json.loads(cli("clip", path, "--json", *ga, *ma).stdout)
                got = octasim.clip(a, **gk, **mk)
                wclip = np.array([g["clip"] for g in want["groups"]])
                if "per_channel" in gk:
                    shape = (a.shape[gk["per_channel"]],)
                elif "per_vector" in gk:
                    shape = a.shape[:-1] + (-(-a.shape[-1] // gk["per_vector"]),)
                else:
                    shape = ()
                expect(got.shape == shape, f"{label}: clip shape {got.shape}, expected {shape}")
                expect(np.array_equal(got.ravel(), wclip),
                       f"{label}: clips differ from the CLI's: {got.ravel()[:4]} vs {wclip[:4]}")
                d = octasim.clip_details(a, **gk, **mk)
                for key in ("mse", "mse_max", "iterations", "elements"):
                    w = np.array([g[key] for g in want["groups"]])
                    expect(np.array_equal(d[key], w), f"{label}: {key} differs from the CLI's")
                expect(d["grouping"] == want["grouping"], f"{label}: grouping text differs")
                expect(d["total_mse"] == want["total"]["mse"], f"{label}: total MSE differs")
    # The per-channel clip of a weight tensor is what a per-channel max would give for 'max'.
    w = arrays["f32_c"]
    expect(np.array_equal(octasim.clip(w, method="max", per_channel=0),
                          np.abs(w).reshape(6, -1).max(axis=1).astype(np.float64)),
           "per-channel max clip differs from NumPy's max |x| per channel")
    # Errors carry the CLI's message.
    bad = np.array([[1.0, 2.0], [np.inf, 3.0]], dtype=np.float32)
    np.save(os.path.join(WORK, "clip_inf.npy"), bad)
    cli_msg = cli("clip", os.path.join(WORK, "clip_inf.npy"), ok=(2,)).stderr.strip()
    try:
        octasim.clip(bad, name=os.path.join(WORK, "clip_inf.npy"))
        expect(False, "an infinite element did not raise")
    except octasim.Error as e:
        expect(cli_msg == f"octasim: error: {e}", f"message '{e}' is not the CLI's '{cli_msg}'")
    for kwargs in ({"bits": 1}, {"method": "entropy"}, {"per_channel": 3},
                   {"per_channel": 0, "per_vector": 2}, {"init": "soon"}):
        try:
            octasim.clip(w, **kwargs)
            expect(False, f"clip({kwargs}) did not raise")
        except octasim.Error:
            pass


# ---------------------------------------------------------------------------------------------

def eq3(x, s, bits, unsigned):
    """OCTAV eq. 3 in NumPy (float64): codes round-half-even(x * 2^(B-1)/s), clamped."""
    x = x.astype(np.float64)
    s = np.broadcast_to(np.asarray(s, dtype=np.float64), x.shape)
    half = 2.0 ** (bits if unsigned else bits - 1)
    lo, hi = (0, 2 ** bits) if unsigned else (-(2 ** (bits - 1)), 2 ** (bits - 1))
    with np.errstate(divide="ignore", invalid="ignore"):
        code = np.clip(np.rint(x * (half / s)), lo, hi)
        q = np.where(s > 0, (s / half) * code, 0.0)
    return q


def check_quantize():
    rng = np.random.default_rng(7)
    x = (rng.standard_normal((4, 50)) * 3).astype(np.float32)
    for bits, unsigned, s in [(4, False, 2.5), (2, False, 0.75), (8, True, 5.0), (4, False, 0.0)]:
        got = octasim.quantize(x, s, bits, unsigned)
        want = eq3(x, s, bits, unsigned).astype(np.float32)
        expect(got.dtype == np.float32 and got.shape == x.shape, "quantize's dtype/shape")
        expect(np.array_equal(got, want), f"quantize bits={bits} unsigned={unsigned} s={s}")
        m = octasim.mse(x, s, bits, unsigned)
        wm = float(np.mean((eq3(x, s, bits, unsigned) - x.astype(np.float64)) ** 2))
        expect(abs(m - wm) <= 1e-12 * max(wm, 1e-300), f"mse {m} vs NumPy's {wm}")
    # Per-channel clipping scalars broadcast; Fortran-order float64 input.
    s = np.array([[0.5], [1.0], [2.0], [4.0]])
    xf = np.asfortranarray(x.astype(np.float64))
    expect(np.array_equal(octasim.quantize(xf, s, 4), eq3(x, s, 4, False).astype(np.float32)),
           "per-channel quantize of a Fortran-order float64 array")
    # The OCTAV clip lowers the MSE below max-scaling's on Gaussian data at 4 bits.
    c = float(octasim.clip(x))
    expect(octasim.mse(x, c, 4) < octasim.mse(x, float(np.abs(x).max()), 4),
           "OCTAV's clip does not beat max-scaling")
    for bad in (lambda: octasim.quantize(x, -1.0, 4), lambda: octasim.mse(x, 1.0, 17),
                lambda: octasim.quantize(x, np.ones(3), 4)):
        try:
            bad()
            expect(False, "bad quantize/mse arguments did not raise")
        except (octasim.Error, ValueError):
            pass


# ---------------------------------------------------------------------------------------------

def check_config():
    src = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "sim", "configs")
    names = octasim.configs()
    expect("nv_small" in names and "nv_full" in names, f"built-in configurations {names}")
    for name in names:
        with open(os.path.join(src, f"{name}.json")) as f:
            file_keys = json.load(f)
        c = octasim.config(name)
        if "base" not in file_keys:
            for k, v in file_keys.items():
                expect(c.get(k) == v, f"{name}: {k} is {c.get(k)}, the JSON file says {v}")
        expect(octasim.config(c) == c, f"{name}: the dict does not round-trip")
    small = octasim.config("nv_small")
    changed = octasim.config({"base": "nv_small", "mac_atomic_c": 16})
    expect(changed["mac_atomic_c"] == 16 and
           {k: v for k, v in changed.items() if k != "mac_atomic_c"} ==
           {k: v for k, v in small.items() if k != "mac_atomic_c"},
           "a dict with a base changes only its keys")
    for bad, words in (({"base": "nv_small", "mac_atomic_cc": 8}, 'unknown key "mac_atomic_cc"'),
                       ("nv_tiny", "unknown configuration 'nv_tiny'"),
                       ({"base": "nv_small", "mac_atomic_c": 12}, "powers of two")):
        try:
            octasim.config(bad)
            expect(False, f"config({bad}) did not raise")
        except octasim.Error as e:
            expect(words in str(e), f"config({bad}) raised '{e}'")


# ---------------------------------------------------------------------------------------------

def nvdla_trace(name):
    path = os.path.join(NVDLA, "traces", "nv_small", name, f"{name}.cfg")
    if not os.path.exists(path):
        print(f"SKIP: {path} not found (NVDLA conformance traces absent)")
        sys.exit(77)
    return path


def cli_report(trace, *args):
    path = os.path.join(WORK, "cli_report.json")
    cli("run", trace, "--report", path, *args, ok=(0, 1))
    with open(path) as f:
        return json.load(f)


def check_run():
    for name in ("pdp_12x9x19_8x3_ave_int8_0", "cdp_8x8x32_lrn3_int8_1"):
        trace = nvdla_trace(name)
        want = cli_report(trace)
        got = octasim.run(trace)
        expect(got == want, f"{name}: octasim.run's report differs from the CLI's")
        expect(got["result"]["passed"] and got["result"]["checks_failed"] == 0,
               f"{name}: checks did not pass")
        expect(got["result"]["trace_cycles"] == want["result"]["trace_cycles"] > 0,
               f"{name}: cycles {got['result']['trace_cycles']}")
        again = octasim.run(trace)  # a second simulation in the same Python process
        expect(again == want, f"{name}: the second run's report differs")
        func = octasim.run(trace, functional=True)  # no report: the CLI's checks, parsed
        printed = cli("run", trace, "--functional").stdout
        expect(func["result"]["passed"] and
               func["result"]["checks_passed"] == want["result"]["checks_passed"] and
               len(func["checks"]) == func["result"]["checks_passed"] and
               all(f"PASS line {c['line']}: {c['check']}" in printed for c in func["checks"]),
               f"{name}: functional result {func}")
        cfg = octasim.run(trace, config={"base": "nv_small"})
        expect(cfg["result"] == want["result"], f"{name}: a config dict changed the result")
    # A timeline file is written where asked.
    timeline = os.path.join(WORK, "timeline.json")
    octasim.run(trace, timeline=timeline)
    with open(timeline) as f:
        expect(len(json.load(f)) > 0, "the timeline is empty")
    # Another thread runs while this one keeps going: the GIL is released during the run.
    done = threading.Event()
    result = {}
    ticks = 0

    def worker():
        result["r"] = octasim.run(nvdla_trace("cdp_33x17x34_lrn5_int8_0"))
        done.set()

    t = threading.Thread(target=worker)
    t.start()
    while not done.is_set():
        ticks += 1
        done.wait(0.001)
    t.join()
    expect(result["r"]["result"]["passed"], "the threaded run failed")
    expect(ticks > 3, f"the main thread ran only {ticks} times during a run (GIL held?)")
    # A bad trace raises octasim.Error with the CLI's message.
    bad = os.path.join(WORK, "bad.cfg")
    with open(bad, "w") as f:
        f.write("write_reg(0x5000, 1);\nthis is not a command\n")
    msg = cli("run", bad, ok=(2,)).stderr.strip()
    try:
        octasim.run(bad)
        expect(False, "a bad trace did not raise")
    except octasim.Error as e:
        expect(msg == f"octasim: error: {e}", f"message '{e}' is not the CLI's '{msg}'")
    for kwargs in ({"config": "nv_tiny"}, {"config": {"bogus": 1}}):
        try:
            octasim.run(trace, **kwargs)
            expect(False, f"run({kwargs}) did not raise")
        except octasim.Error:
            pass


# ---------------------------------------------------------------------------------------------

def check_net():
    model = os.path.join(WORK, "lenet5.onnx")
    cli("zoo", "lenet5", "--out", model)
    images = np.random.default_rng(3).random((2, 1, 32, 32), dtype=np.float32)
    npy = os.path.join(WORK, "images.npy")
    np.save(npy, images)
    out = os.path.join(WORK, "cli_out.npy")
    rep = os.path.join(WORK, "cli_net.json")
    cli("net", model, "--input", npy, "--output", out, "--report", rep, "--calibration", "octav")
    outputs, report = octasim.net(model, images, calibration="octav")
    with open(rep) as f:
        expect(report == json.load(f), "octasim.net's report differs from the CLI's")
    want = np.load(out)
    expect(outputs.shape == want.shape and np.array_equal(outputs, want),
           f"octasim.net's outputs differ from the CLI's ({outputs.shape} vs {want.shape})")
    expect(outputs.shape[0] == 2, f"outputs for {outputs.shape[0]} images, 2 sent")
    # compile + run: the trace plays and passes its goldens.
    cfg = octasim.compile(model, os.path.join(WORK, "compiled"), images[:1])
    r = octasim.run(cfg)
    expect(r["result"]["passed"] and r["result"]["checks_passed"] > 0,
           "the compiled trace does not pass its checks")
    try:
        octasim.net(os.path.join(WORK, "no_such.onnx"))
        expect(False, "a missing model did not raise")
    except octasim.Error as e:
        expect("no_such.onnx" in str(e), f"message '{e}' does not name the model")


def main():
    {"clip": check_clip, "quantize": check_quantize, "config": check_config, "run": check_run,
     "net": check_net}[CHECK]()
    for f in failures:
        print("FAIL:", f)
    print(f"{CHECK}: {checks - len(failures)} of {checks} checks passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
