"""octasim from Python: OCTAV clipping of NumPy arrays, device runs and their reports as data.

    export PYTHONPATH=$PWD/build/python
    >>> import numpy as np, octasim
    >>> w = np.random.default_rng(0).standard_normal((64, 3, 3, 3))
    >>> octasim.clip(w, bits=4, per_channel=0)         # 64 OCTAV clipping scalars
    >>> octasim.run("trace.cfg")["cycles"]             # the --report JSON of `octasim run`

Clipping, quantization and configurations are computed in this process by the C++ code the
CLI uses (octasim._core). Simulations (run, net, compile) run the octasim binary in a child
process: SystemC elaborates one design per process, so a child per call is what lets a Python
session simulate as often as it likes (and keeps a simulator failure out of the interpreter).
The child is the binary built with this package (octasim._core.executable), or the one the
environment variable OCTASIM_EXECUTABLE names. While a child runs, the GIL is released (other
Python threads go on).

Every error the CLI would print as `octasim: error: MESSAGE` raises octasim.Error(MESSAGE).
"""

import json
import os
import subprocess
import tempfile

import numpy as np

from . import _core
from ._core import Error

__all__ = ["Error", "clip", "clip_details", "quantize", "mse", "config", "configs", "run", "net",
           "compile", "read_npy", "executable"]


# ---------------------------------------------------------------------------------------------
# Clipping and quantization (in process)

def _float_array(a):
    """`a` as a NumPy array octasim can read (any layout; float16/32/64, integers, bool)."""
    a = np.asarray(a)
    if a.dtype.kind not in "fiub":
        raise Error(f"array of dtype {a.dtype}: expected a numeric dtype "
                    "(float16/32/64, an integer or bool)")
    return a


def clip_details(a, bits=4, unsigned=False, method="octav", per_channel=None, per_vector=None,
                 *, init="half-max", tol=1e-4, max_iter=10, candidates=1000, percentile=99.99,
                 name="array"):
    """What `octasim clip --json` reports, per group, as a dict of NumPy arrays.

    Keys: clip, mse, mse_max, elements, iterations, converged (one entry per group, in the CLI's
    group order), iterative, grouping (the CLI's words), total_mse, total_mse_max. The array is
    converted to float32 as NumPy's astype(np.float32) does, which is how the CLI converts a
    file's values, so the numbers equal the CLI's for the same data. `name` names the array in
    error messages.
    """
    a = _float_array(a)
    return _core.clip(a, int(bits), bool(unsigned), str(method),
                      None if per_channel is None else int(per_channel),
                      None if per_vector is None else int(per_vector), str(init), float(tol),
                      int(max_iter), int(candidates), float(percentile), str(name), a.dtype.name)


def clip(a, bits=4, unsigned=False, method="octav", per_channel=None, per_vector=None,
         **options):
    """Clipping scalars of `a` as a float64 NumPy array, equal to `octasim clip`'s for the same data.

    method: octav (default), bruteforce, max, percentile or mse-hist. Grouping as the CLI's:
    per tensor (default) gives a 0-d array; per_channel=AXIS one scalar per index of that axis
    (shape (a.shape[AXIS],)); per_vector=N one per N consecutive elements of the last axis
    (shape a.shape[:-1] + (ceil(a.shape[-1] / N),)). options: init ("half-max", "zero",
    "random" or a number), tol, max_iter, candidates, percentile — the CLI's --init, --tol,
    --max-iter, --candidates, --percentile.
    """
    a = _float_array(a)
    clips = clip_details(a, bits, unsigned, method, per_channel, per_vector, **options)["clip"]
    if per_channel is not None:
        return clips
    if per_vector is not None:
        last = a.shape[-1] if a.ndim else 1
        lead = a.shape[:-1] if a.ndim else ()
        return clips.reshape(lead + (-(-last // int(per_vector)),))
    return clips.reshape(())


def quantize(a, s, bits=4, unsigned=False):
    """Clipped uniform quantization Q(x) (OCTAV eq. 3) of `a` with clipping scalar(s) `s`.

    Signed: levels are the multiples of s * 2^(1-bits) in [-s, s]; unsigned: multiples of
    s * 2^-bits in [0, s]. `s` is a scalar or any array broadcastable to a's shape (e.g. the
    per-channel result of clip, reshaped). Returns float32 of a's shape (a is read as float32).
    """
    a = _float_array(a)
    s_full = np.broadcast_to(np.asarray(s, dtype=np.float64), a.shape)
    return _core.quantize(a, s_full, int(bits), bool(unsigned))


def mse(a, s, bits=4, unsigned=False):
    """Empirical quantization MSE (OCTAV eq. 1) of `a` with one clipping scalar `s`."""
    return _core.mse(_float_array(a), float(s), int(bits), bool(unsigned))


def read_npy(path):
    """A .npy file or .npz member ("a.npz:name") read by octasim's reader: (float32 array, dtype)."""
    return _core.read_npy(os.fspath(path))


# ---------------------------------------------------------------------------------------------
# Configurations

def configs():
    """The names of the built-in hardware configurations."""
    return list(_core.builtin_configs())


def config(what="nv_small"):
    """A hardware configuration as a dict of every key (validated as `--config` validates it).

    `what`: a built-in name, a path to a JSON or NVDLA .spec file, or a dict (which may start
    from a built-in with "base": "nv_small" and change some keys).
    """
    if isinstance(what, dict):
        return json.loads(_core.config_json(json.dumps(what), True))
    return json.loads(_core.config_json(os.fspath(what), False))


# ---------------------------------------------------------------------------------------------
# Simulations (child octasim processes)

def executable():
    """The octasim binary simulations run in."""
    return os.environ.get("OCTASIM_EXECUTABLE") or _core.executable


def _flags(options):
    """Keyword options as CLI flags: calib_images=10 -> --calib-images 10; no_fold=True ->
    --no-fold; False and None are left out; a list repeats the option."""
    args = []
    for key, value in options.items():
        flag = "--" + key.replace("_", "-")
        if value is None or value is False:
            continue
        if value is True:
            args.append(flag)
        elif isinstance(value, (list, tuple)):
            for v in value:
                args += [flag, os.fspath(v) if isinstance(v, os.PathLike) else str(v)]
        else:
            args += [flag, os.fspath(value) if isinstance(value, os.PathLike) else str(value)]
    return args


def _config_arg(cfg, tmp):
    """--config's value: a name or path as given, a dict written to a JSON file in `tmp`."""
    if cfg is None:
        return []
    if isinstance(cfg, dict):
        path = os.path.join(tmp, "config.json")
        with open(path, "w") as f:
            json.dump(config(cfg), f)  # validated here: a bad key raises before the run
        return ["--config", path]
    return ["--config", os.fspath(cfg)]


def _cli(args, ok=(0,)):
    """Runs octasim with `args`; returns the CompletedProcess when its exit status is in `ok`,
    else raises Error with the CLI's message."""
    try:
        r = subprocess.run([executable(), *args], stdin=subprocess.DEVNULL,
                           capture_output=True, text=True)
    except OSError as e:
        raise Error(f"cannot start octasim ({executable()}): {e}") from None
    if r.returncode in ok:
        return r
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    for prefix in ("octasim: error: ", "octasim: internal error: "):
        for ln in lines:
            if ln.startswith(prefix):
                raise Error(ln[len(prefix):])
    if r.returncode < 0:
        raise Error(f"octasim {args[0]} was killed by signal {-r.returncode}")
    detail = lines[-1] if lines else (r.stdout.strip().splitlines() or [""])[-1]
    raise Error(f"octasim {args[0]} exited with status {r.returncode}: {detail}")


def _functional_result(stdout):
    """What a functional run prints (it writes no report): its checks and verdict."""
    checks = []
    result = {}
    for ln in stdout.splitlines():
        word, _, rest = ln.partition(" line ")
        if word in ("PASS", "FAIL") and ":" in rest:
            line, _, text = rest.partition(": ")
            checks.append({"passed": word == "PASS", "line": int(line), "check": text})
        elif ln.startswith("checks: "):
            parts = ln[len("checks: "):].replace(",", "").split()
            result = {"checks_passed": int(parts[0]), "checks_failed": int(parts[2])}
    result["passed"] = result.get("checks_failed", 1) == 0
    return {"functional": True, "result": result, "checks": checks}


def _input_arg(inputs, tmp):
    """["--input", PATH] for a path, or for an array saved as float32 .npy in `tmp`; [] for
    None."""
    if inputs is None:
        return []
    if isinstance(inputs, (str, os.PathLike)):
        return ["--input", os.fspath(inputs)]
    path = os.path.join(tmp, "inputs.npy")
    np.save(path, np.ascontiguousarray(np.asarray(inputs, dtype=np.float32)))
    return ["--input", path]


def run(trace, config=None, functional=False, timeline=None, **options):
    """Plays a trace (.cfg NVDLA trace, or .txn) on the device: `octasim run TRACE --report`.

    Returns the report (sim/report/report.schema.json) as a dict: "result" holds passed,
    checks_passed, checks_failed, trace_cycles and compute_cycles (a failed check is data, not
    an exception); "layers", "units", "statistics", "memory", "dram" and "config" the rest.
    functional=True plays the trace on the zero-time functional device, which writes no report:
    the dict is then {"functional": True, "result": {passed, checks_passed, checks_failed},
    "checks": [{passed, line, check}, ...]} (what the CLI prints). config: None for the CLI's
    default (nv_small; nv_full for .txn), a built-in name, a JSON/.spec path or a dict (see
    octasim.config). timeline: a path to write the Chrome-trace timeline to. options: other
    `octasim run` options (timeout_cycles=..., timeline_detail="dma", vcd="out.vcd"). Raises
    Error with the CLI's message for bad input.
    """
    with tempfile.TemporaryDirectory(prefix="octasim_run_") as tmp:
        report = os.path.join(tmp, "report.json")
        args = ["run", os.fspath(trace), "--no-progress", *_config_arg(config, tmp)]
        if functional:
            args.append("--functional")
        else:
            args += ["--report", report]
        if timeline is not None:
            args += ["--timeline", os.fspath(timeline)]
        r = _cli(args + _flags(options), ok=(0, 1))
        if functional:
            return _functional_result(r.stdout)
        with open(report) as f:
            return json.load(f)


def net(model, inputs=None, config="nv_small", **options):
    """Runs an ONNX network on the device: `octasim net MODEL --input X --output Y --report R`.

    inputs: a NumPy array (a batch along the first axis, e.g. N x C x H x W; saved as float32
    .npy), a path (.npy, .npz:member, .pb, IDX[.gz]) or None (one deterministic random image).
    Returns (outputs, report): the device's dequantized outputs as a NumPy array and the first
    inference's cycle-level report as a dict. config as in run(). options: the CLI's other
    options by name (precision="int4", calibration="octav", labels=PATH, functional=True,
    batch=4, no_fold=True, ...). Raises Error with the CLI's message, also when the device's
    outputs differ from the quantized reference executor's (the CLI's exit status 1).
    """
    with tempfile.TemporaryDirectory(prefix="octasim_net_") as tmp:
        report = os.path.join(tmp, "report.json")
        output = os.path.join(tmp, "outputs.npy")
        args = ["net", os.fspath(model), "--report", report, "--output", output,
                "--no-progress", *_config_arg(config, tmp)]
        args += _input_arg(inputs, tmp)
        r = _cli(args + _flags(options), ok=(0, 1))
        if r.returncode == 1:
            summary = [ln for ln in r.stdout.splitlines() if ln.strip()]
            raise Error("the device's outputs differ from the quantized reference executor's" +
                        (f" ({summary[-1].strip()})" if summary else ""))
        with open(report) as f:
            rep = json.load(f)
        outputs = np.load(output) if os.path.getsize(output) > 0 else None
        return outputs, rep


def compile(model, out, inputs=None, config="nv_small", **options):
    """Compiles an ONNX network into an NVDLA trace: `octasim compile MODEL --out DIR`.

    Writes DIR/net.cfg with its goldens and layer map (what run() plays) and returns the path of
    net.cfg. inputs as in net() (the image the trace runs: image=K picks one of a batch).
    options: the CLI's other options by name (precision, calibration, weights, ...).
    """
    with tempfile.TemporaryDirectory(prefix="octasim_compile_") as tmp:
        args = ["compile", os.fspath(model), "--out", os.fspath(out), *_config_arg(config, tmp)]
        args += _input_arg(inputs, tmp)
        _cli(args + _flags(options))
    return os.path.join(os.fspath(out), "net.cfg")
