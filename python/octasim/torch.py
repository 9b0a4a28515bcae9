"""octasim.torch: quantization-aware training with OCTAV clipping for PyTorch models.

    export PYTHONPATH=$PWD/build/python         # needs Debian's python3-torch
    >>> import octasim.torch as ot
    >>> conv = ot.QuantConv2d(1, 16, 3, padding=1)              # weights: 4-bit, per channel
    >>> act = ot.FakeQuantize(bits=4, unsigned=True)             # after a ReLU: codes 0..15
    >>> y = act(torch.relu(conv(x)))                             # OCTAV clips, MAD gradients

What it holds:
- FakeQuantize: a clipped uniform quantizer in the forward pass whose clipping scalar is OCTAV's
  (octasim.clip, the C++ code of `octasim clip`) computed on the fly on the detached tensor,
  per tensor or per channel, and one of models/quant's gradient estimators in the backward pass:
  MAD (magnitude-aware: 1 inside the range, s/|x| where x is clipped), PWL (1 inside, 0 where
  clipped) or STE (1 everywhere); on an unsigned quantizer, negative x get 0 under MAD and PWL.
  QuantConv2d / QuantLinear: nn.Conv2d / nn.Linear whose weights pass a per-output-channel
  FakeQuantize.
- Two level grids. grid="device" (default) is the device's (firmware/net/quant.hpp): codes
  -M..M (signed) or 0..M (unsigned) with M = 2^(B-1)-1 (signed; unsigned at 8 bits) or 2^B - 1
  (unsigned below 8 bits), step = s/M, round half away from zero; its OCTAV clip is computed at
  the bits the network compiler gives OCTAV for that code range (calibrator_bits), so a trained
  model exports to the device exactly. grid="octav" is the OCTAV patent's eq. 3 quantizer
  (octasim.quantize: 2^B + 1 levels in [-s, s], step s*2^(1-B); unsigned 2^B + 1 levels in
  [0, s], round half to even), which the device cannot hold (its codes reach +-2^(B-1)).
- The QAT-initialisation recipe of the quantized-NN-initialization patent (models/quant/qat_init):
  MMSE weight quantization, the activation offset (mean over calibration batches of each batch's
  minimum) and the MSE-minimising saturation factor; qat_init() applies it to a model.
- DynamicLossScaler (octasim.mixed_precision; the mixed-precision training guide: scale the loss, skip the update and
  halve the scale on an overflow, double it after N clean steps) and MasterWeights (FP32 master
  copies of a low-precision model's parameters).
- export(): the trained model as ONNX (its weights already on their quantization grid) plus the
  calibration table `octasim net --calibration-table` reads (keyed by ONNX tensor name).

Why octasim.clip and not a torch re-implementation of OCTAV: the clip is then the very number
`octasim clip` and the network compiler compute for the same data (the C++ iteration with its
exact sums, initialisation and stopping rule), so what training sees is what the device is
given; it costs one copy of the detached tensor to NumPy (about 10 ms for a 128 x 16 x 28 x 28
activation on one core) and runs on the CPU only (a CUDA tensor is copied to the host).
"""

import copy
import json
import math
import os

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from . import Error, _core
from . import clip as _clip
from .mixed_precision import DynamicLossScaler, MasterWeights

__all__ = ["FakeQuantize", "QuantConv2d", "QuantLinear", "device_max_code", "calibrator_bits",
           "quantize_tensor", "derivative", "compute_clip", "quantizers", "configure",
           "calibrate", "mmse_weight_quantization", "quantize_activation",
           "activation_total_mse", "calibrate_activation", "qat_init", "DynamicLossScaler",
           "MasterWeights", "export", "onnx_nodes"]

GRIDS = ("device", "octav")
ESTIMATORS = ("mad", "pwl", "ste")


# ---------------------------------------------------------------------------------------------
# Level grids and gradient estimators

def device_max_code(bits, unsigned):
    """M of the device's code range (firmware/net/quant.hpp TensorQuant::max_code)."""
    if unsigned:
        return (1 << (bits - 1)) - 1 if bits >= 8 else (1 << bits) - 1
    return (1 << (bits - 1)) - 1


def calibrator_bits(bits, unsigned):
    """The bits the network compiler gives OCTAV for a device tensor of `bits` codes: the B whose
    OCTAV step s/2^B (unsigned) or s/2^(B-1) (signed) is nearest the device's s/M."""
    m = device_max_code(bits, unsigned)
    levels = m + 1 if unsigned else 2 * (m + 1)
    return int(round(math.log2(levels)))


def _check(bits, unsigned, grid):
    if grid not in GRIDS:
        raise Error(f"grid '{grid}': expected one of {', '.join(GRIDS)}")
    if not isinstance(bits, int) or not 2 <= bits <= 16:
        raise Error(f"bits {bits!r}: expected an integer from 2 to 16")
    if grid == "device" and bits not in (4, 8, 16):
        raise Error(f"bits {bits} on the device grid: expected 4, 8 or 16 (the device's codes)")


def quantize_tensor(x, s, bits=4, unsigned=False, grid="device"):
    """Q(x) with clipping scalar(s) `s` (a number or a tensor broadcastable to x), computed in
    float64 and returned in x's dtype. grid "octav" equals octasim.quantize; "device" equals
    the device's codes times its step (see the module's docstring). s <= 0 maps x to 0."""
    _check(bits, unsigned, grid)
    xd = x.detach().double()
    s = torch.as_tensor(s, dtype=torch.float64, device=x.device)
    pos = s > 0
    s_safe = torch.where(pos, s, torch.ones_like(s))
    if grid == "octav":
        half = float(2 ** (bits - 1))
        if unsigned:
            step, inv, lo, hi = s_safe / (2 * half), (2 * half) / s_safe, 0.0, 2 * half
        else:
            step, inv, lo, hi = s_safe / half, half / s_safe, -half, half
        codes = torch.clamp(torch.round(xd * inv), lo, hi)  # round half to even
    else:
        m = float(device_max_code(bits, unsigned))
        step = s_safe / m
        v = xd / step
        r = torch.sign(v) * torch.floor(v.abs() + 0.5)  # round half away from zero
        codes = torch.clamp(r, 0.0 if unsigned else -m, m)
    out = torch.where(pos, codes * step, torch.zeros_like(xd))
    return out.to(x.dtype)


def derivative(estimator, x, s, unsigned=False):
    """dQ/dx as models/quant/gradients.cpp assigns it (float64): STE 1; PWL 1 for |x| <= s, else
    0; MAD 1 for |x| <= s, else s/|x|; unsigned PWL and MAD give 0 for x < 0."""
    if estimator not in ESTIMATORS:
        raise Error(f"estimator '{estimator}': expected one of {', '.join(ESTIMATORS)}")
    xd = x.detach().double()
    s = torch.as_tensor(s, dtype=torch.float64, device=x.device)
    if estimator == "ste":
        return torch.ones_like(xd)
    a = xd.abs()
    inside = a <= s
    if estimator == "pwl":
        d = inside.double()
    else:
        d = torch.where(inside, torch.ones_like(a), s / torch.where(inside, torch.ones_like(a), a))
    if unsigned:
        d = torch.where(xd < 0, torch.zeros_like(d), d)
    return d


class _FakeQuant(torch.autograd.Function):
    """Forward: quantize_tensor. Backward: grad_in = grad_out * derivative (in float64, as
    models::quantizer_backward computes it), no gradient for the clip."""

    @staticmethod
    def forward(ctx, x, s, bits, unsigned, grid, estimator):  # pylint: disable=arguments-differ
        ctx.save_for_backward(x, s)
        ctx.unsigned = unsigned
        ctx.estimator = estimator
        return quantize_tensor(x, s, bits, unsigned, grid)

    @staticmethod
    def backward(ctx, grad):  # pylint: disable=arguments-differ
        x, s = ctx.saved_tensors
        d = derivative(ctx.estimator, x, s, ctx.unsigned)
        return (grad.double() * d).to(grad.dtype), None, None, None, None, None


def compute_clip(x, bits=4, unsigned=False, per_channel=None, method="octav", grid="device",
                 **options):
    """The clipping scalar(s) of x by octasim.clip (method octav, max, percentile, mse-hist,
    bruteforce; options as octasim.clip's), at the bits OCTAV takes for the grid, as a float64
    tensor shaped to broadcast over x (per_channel=AXIS: one per index of that axis)."""
    _check(bits, unsigned, grid)
    cb = calibrator_bits(bits, unsigned) if grid == "device" else bits
    a = x.detach().float().cpu().numpy()
    if per_channel is None:
        s = _clip(a, bits=cb, unsigned=unsigned, method=method, **options)
        return torch.tensor(float(s), dtype=torch.float64, device=x.device)
    axis = per_channel % x.dim()
    s = _clip(a, bits=cb, unsigned=unsigned, method=method, per_channel=axis, **options)
    shape = [1] * x.dim()
    shape[axis] = x.shape[axis]
    return torch.from_numpy(np.asarray(s, dtype=np.float64)).reshape(shape).to(x.device)


# ---------------------------------------------------------------------------------------------
# Modules

class FakeQuantize(nn.Module):
    """A fake-quantizer with an on-the-fly OCTAV clip and a chosen gradient estimator.

    bits, unsigned: the code format (on the device grid: 4-bit unsigned codes 0..15 after a
    ReLU, 8-bit -127..127 or 0..127 elsewhere). per_channel: None (one clip) or the axis with one
    clip per index. role "weight": the clip is computed at every forward (train and eval);
    "activation": computed on every training batch, and an exponential running average of the
    batch clips (weight `momentum` for the new one) is what eval mode uses. frozen=True: the
    stored clip is used in training as well (after calibrate()). enabled=False: identity (FP32).
    method: octasim.clip's method for the clip ("octav"; "max" for max scaling). options: the
    other octasim.clip options (max_iter=50 by default, what the network compiler uses).

    Buffers: `clip` (the last clip: a running average for activations; empty until the first
    forward), `seen_min` / `seen_max` (extremes of the data seen since creation, for the
    calibration table).
    """

    def __init__(self, bits=4, unsigned=False, per_channel=None, grid="device", estimator="mad",
                 method="octav", role="activation", momentum=0.1, enabled=True, **options):
        super().__init__()
        _check(bits, unsigned, grid)
        if estimator not in ESTIMATORS:
            raise Error(f"estimator '{estimator}': expected one of {', '.join(ESTIMATORS)}")
        if role not in ("weight", "activation"):
            raise Error(f"role '{role}': expected weight or activation")
        self.bits, self.unsigned, self.per_channel = bits, bool(unsigned), per_channel
        self.grid, self.estimator, self.method, self.role = grid, estimator, method, role
        self.momentum, self.enabled, self.frozen = float(momentum), bool(enabled), False
        self.options = {"max_iter": 50, **options}
        self.register_buffer("clip", torch.zeros(0, dtype=torch.float64))
        self.register_buffer("seen_min", torch.tensor(math.inf, dtype=torch.float64))
        self.register_buffer("seen_max", torch.tensor(-math.inf, dtype=torch.float64))
        self._export_log = None  # a list while export() traces the model

    def extra_repr(self):
        pc = "" if self.per_channel is None else f", per_channel={self.per_channel}"
        return (f"bits={self.bits}, unsigned={self.unsigned}{pc}, grid={self.grid}, "
                f"estimator={self.estimator}, method={self.method}, role={self.role}")

    def _load_from_state_dict(self, state_dict, prefix, *args, **kwargs):
        # The clip's shape depends on what the quantizer has seen (empty, one, per channel):
        # take the saved one's.
        saved = state_dict.get(prefix + "clip")
        if saved is not None:
            self.clip = torch.empty_like(saved, dtype=torch.float64)
        super()._load_from_state_dict(state_dict, prefix, *args, **kwargs)

    def max_code(self):
        return device_max_code(self.bits, self.unsigned)

    def compute_clip(self, x):
        return compute_clip(x, self.bits, self.unsigned, self.per_channel, self.method, self.grid,
                            **self.options)

    def _observe(self, x):
        with torch.no_grad():
            self.seen_min.fill_(min(float(self.seen_min), float(x.min())))
            self.seen_max.fill_(max(float(self.seen_max), float(x.max())))

    def forward(self, x):  # pylint: disable=arguments-differ
        if self._export_log is not None:
            return self._export_forward(x)
        if not self.enabled:
            return x
        if x.numel() == 0:
            return x
        self._observe(x)
        fresh = self.role == "weight" or (self.training and not self.frozen) or \
            self.clip.numel() == 0
        if fresh:
            s = self.compute_clip(x)
            with torch.no_grad():
                if self.role == "activation" and self.clip.numel() > 0 and self.training and \
                        self.clip.shape == s.shape:
                    self.clip.mul_(1.0 - self.momentum).add_(self.momentum * s)
                else:
                    self.clip = s.clone()
        else:
            s = self.clip
        return _FakeQuant.apply(x, s.to(x.device), self.bits, self.unsigned, self.grid,
                                self.estimator)

    def _export_forward(self, x):
        if self.clip.numel() != 1:
            raise Error("export: an activation quantizer has no clip (run the model in training "
                        "or calibrate() first) or one clip per channel (the device holds one "
                        "clip per activation tensor)")
        if self in self._export_log:
            raise Error("export: a FakeQuantize module is applied twice in one forward pass")
        self._export_log.append(self)
        return _ExportQuant.apply(x, float(self.clip), self.bits, self.unsigned, self.grid)


class _ExportQuant(torch.autograd.Function):
    """An activation quantizer as export() traces it: quantizes in PyTorch, exports as one ONNX
    Identity node (which octasim's importer removes) marking the tensor the clip belongs to."""

    @staticmethod
    def forward(ctx, x, s, bits, unsigned, grid):  # pylint: disable=arguments-differ
        return quantize_tensor(x, s, bits, unsigned, grid)

    @staticmethod
    def symbolic(g, x, s, bits, unsigned, grid):  # pylint: disable=unused-argument
        return g.op("Identity", x)


def _weight_quantizer(bits, grid, estimator, method, **options):
    return FakeQuantize(bits=bits, unsigned=False, per_channel=0, grid=grid, estimator=estimator,
                        method=method, role="weight", **options)


class QuantConv2d(nn.Conv2d):
    """nn.Conv2d whose weights pass a per-output-channel FakeQuantize (`weight_quant`)."""

    def __init__(self, *args, weight_bits=4, grid="device", estimator="mad", method="octav",
                 **kwargs):
        super().__init__(*args, **kwargs)
        self.weight_quant = _weight_quantizer(weight_bits, grid, estimator, method)

    def forward(self, x):  # pylint: disable=arguments-differ
        return self._conv_forward(x, self.weight_quant(self.weight), self.bias)


class QuantLinear(nn.Linear):
    """nn.Linear whose weights pass a per-output-channel FakeQuantize (`weight_quant`)."""

    def __init__(self, *args, weight_bits=4, grid="device", estimator="mad", method="octav",
                 **kwargs):
        super().__init__(*args, **kwargs)
        self.weight_quant = _weight_quantizer(weight_bits, grid, estimator, method)

    def forward(self, x):  # pylint: disable=arguments-differ
        return F.linear(x, self.weight_quant(self.weight), self.bias)


def quantizers(model, role=None):
    """The FakeQuantize modules of a model (of one role if given), in module order."""
    return [m for m in model.modules()
            if isinstance(m, FakeQuantize) and (role is None or m.role == role)]


def configure(model, role=None, **settings):
    """Sets attributes (enabled, frozen, estimator, method, momentum, ...) on every FakeQuantize
    of the model (of one role if given)."""
    allowed = {"enabled", "frozen", "estimator", "method", "momentum", "grid"}
    for key, value in settings.items():
        if key not in allowed:
            raise Error(f"configure: unknown setting '{key}' (expected {', '.join(sorted(allowed))})")
        if key == "estimator" and value not in ESTIMATORS:
            raise Error(f"estimator '{value}': expected one of {', '.join(ESTIMATORS)}")
        if key == "grid" and value not in GRIDS:
            raise Error(f"grid '{value}': expected one of {', '.join(GRIDS)}")
    for q in quantizers(model, role):
        for key, value in settings.items():
            setattr(q, key, value)


@torch.no_grad()
def calibrate(model, images, method=None, fp32=True):
    """Post-training calibration: one forward pass of `images` (one batch) in which every
    activation quantizer computes its clip on all of its input (with `method` if given), then
    freezes it. fp32=True: the pass runs with every quantizer disabled, so each clip is computed
    on FP32 activations of the FP32 weights (what `octasim net --calibration` does with a float
    model); fp32="activations": weights quantized, activations FP32 (what the device's
    calibration computes for an exported model, whose weights are already quantized);
    fp32=False: on the activations of the quantized network upstream. Returns the model in eval
    mode."""
    if fp32 not in (True, False, "activations"):
        raise Error(f"calibrate: fp32={fp32!r}: expected True, False or \"activations\"")
    acts = quantizers(model, "activation")
    state = [(q.enabled, q.method) for q in quantizers(model)]
    if fp32 is True:
        configure(model, enabled=False)
    elif fp32 == "activations":
        configure(model, role="activation", enabled=False)
    hooks = []

    def hook(q, inputs):
        x = inputs[0]
        if method is not None:
            q.method = method
        q.clip = q.compute_clip(x).clone()
        q.frozen = True
        q._observe(x)  # pylint: disable=protected-access

    for q in acts:
        hooks.append(q.register_forward_pre_hook(hook))
    model.eval()
    try:
        model(images)
    finally:
        for h in hooks:
            h.remove()
        for q, (enabled, _) in zip(quantizers(model), state):
            q.enabled = enabled
    return model


# ---------------------------------------------------------------------------------------------
# The QAT-initialisation recipe: models/quant/qat_init.hpp's C++ through octasim._core

def mmse_weight_quantization(w, bits=4, candidates=1000):
    """k-bit MMSE weight quantization of one array: (scale a, integer codes q in
    [-2^(k-1), 2^(k-1)-1], mse) minimising mean (w - a q)^2 — a grid of `candidates` scales
    j/J * max|w| / 2^(k-1), then alternating minimisation (codes for a, then a = <w,q>/<q,q>)
    while the MSE does not rise (models::mmse_weight_quantization). q is flat, in w's C order."""
    return _core.mmse_weight_quantization(np.asarray(w, dtype=np.float32).ravel(), int(bits),
                                          int(candidates))


def quantize_activation(x, offset, saturation, bits):
    """The patent's activation quantizer: m + round(clip(x - m, 0, beta) * L / beta) * beta / L,
    L = 2^k - 1, round half to even (models::quantize_activation, element-wise)."""
    return _core.quantize_activation(x, float(offset), float(saturation), int(bits))


def _batches(batches):
    return [np.asarray(b, dtype=np.float32).ravel() for b in batches]


def activation_total_mse(batches, offset, saturation, bits):
    """Sum over batches of each batch's mean squared quantization error
    (models::activation_total_mse)."""
    return _core.activation_total_mse(_batches(batches), float(offset), float(saturation),
                                      int(bits))


def calibrate_activation(batches, bits=4, candidates=1000):
    """(offset m, saturation beta, total MSE): m is the mean over the batches of each batch's
    minimum; beta minimises activation_total_mse over a grid of `candidates` values
    j/J * (max - m), then over a second grid across the two cells around the best
    (models::calibrate_activation)."""
    return _core.calibrate_activation(_batches(batches), int(bits), int(candidates))


@torch.no_grad()
def qat_init(model, calibration_batches, candidates=200, weights=True, activations=True):
    """Initialises QAT by the patent's recipe, from a trained FP32 model.

    weights: every QuantConv2d/QuantLinear weight becomes its MMSE quantization, output channel
    by output channel (a * q: the device's `--weights mmse` arrangement), at the weight
    quantizer's bits. activations: `calibration_batches` (a list of input batches, one
    calibration instance each) run through the FP32 model; each unsigned activation quantizer
    gets offset m = mean of the batch minima and clip = the MSE-optimal saturation beta with
    L = the device's M levels (the patent's quantizer with m = 0 is the device's unsigned grid).
    The device's quantization is symmetric, so m must come out 0 (it does after a ReLU); a
    quantizer with m != 0, or a signed one, keeps an OCTAV clip from the same data. The clips are
    stored (not frozen): training then refines them. Returns {name: (offset, clip, method)}."""
    report = {}
    if activations:
        acts = [(n, m) for n, m in model.named_modules()
                if isinstance(m, FakeQuantize) and m.role == "activation"]
        seen = {n: [] for n, _ in acts}
        hooks = []
        for n, q in acts:
            hooks.append(q.register_forward_pre_hook(
                lambda mod, inp, n=n: seen[n].append(inp[0].detach().float().cpu().numpy())))
        state = [q.enabled for q in quantizers(model)]
        configure(model, enabled=False)
        was_training = model.training
        model.eval()
        try:
            for xb in calibration_batches:
                model(xb)
        finally:
            for h in hooks:
                h.remove()
            for q, e in zip(quantizers(model), state):
                q.enabled = e
            model.train(was_training)
        for n, q in acts:
            data = seen[n]
            bits_l = int(round(math.log2(q.max_code() + 1)))
            offset, beta, _ = calibrate_activation(data, bits_l, candidates) if q.unsigned \
                else (0.0, 0.0, 0.0)
            if q.unsigned and offset == 0.0 and beta > 0.0:
                q.clip = torch.tensor(beta, dtype=torch.float64)
                report[n] = (offset, beta, "mse saturation")
            else:
                s = q.compute_clip(torch.from_numpy(np.concatenate([d.ravel() for d in data])))
                q.clip = s.clone()
                report[n] = (offset, float(s), "octav (signed or offset != 0)")
    if weights:
        for n, mod in model.named_modules():
            if isinstance(mod, (QuantConv2d, QuantLinear)):
                w = mod.weight.detach().cpu().numpy()
                out = np.empty_like(w, dtype=np.float64)
                for k in range(w.shape[0]):
                    a, q, _ = mmse_weight_quantization(w[k], mod.weight_quant.bits, candidates)
                    out[k] = (a * q.astype(np.float64)).reshape(w[k].shape)
                mod.weight.copy_(torch.from_numpy(out).to(mod.weight.dtype))
                report[n + ".weight"] = (0.0, None, "mmse per output channel")
    return report


# ---------------------------------------------------------------------------------------------
# Export: ONNX + calibration table

def _varint(buf, i):
    shift = value = 0
    while True:
        if i >= len(buf):
            raise Error("ONNX: truncated varint")
        b = buf[i]
        i += 1
        value |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return value, i


def _fields(buf):
    """(field number, value) of a protobuf message: bytes for length-delimited fields, int for
    varints; fixed-width fields are skipped."""
    i = 0
    while i < len(buf):
        key, i = _varint(buf, i)
        field, wire = key >> 3, key & 7
        if wire == 0:
            v, i = _varint(buf, i)
            yield field, v
        elif wire == 2:
            n, i = _varint(buf, i)
            if i + n > len(buf):
                raise Error("ONNX: truncated field")
            yield field, buf[i:i + n]
            i += n
        elif wire == 1:
            i += 8
        elif wire == 5:
            i += 4
        else:
            raise Error(f"ONNX: unsupported protobuf wire type {wire}")


def onnx_nodes(path):
    """The graph of an ONNX file as (nodes, inputs, outputs): nodes a list of dicts {op_type,
    name, inputs, outputs} in file order; inputs/outputs the graph's value names. (A minimal
    protobuf reader: Debian's python3-onnx is not needed.)"""
    with open(path, "rb") as f:
        buf = f.read()
    graph = next((v for k, v in _fields(buf) if k == 7), None)
    if graph is None:
        raise Error(f"{path}: no graph in the ONNX model")
    nodes, inputs, outputs = [], [], []
    for k, v in _fields(graph):
        if k == 1:
            n = {"op_type": "", "name": "", "inputs": [], "outputs": []}
            for fk, fv in _fields(v):
                if fk == 1:
                    n["inputs"].append(fv.decode())
                elif fk == 2:
                    n["outputs"].append(fv.decode())
                elif fk == 3:
                    n["name"] = fv.decode()
                elif fk == 4:
                    n["op_type"] = fv.decode()
            nodes.append(n)
        elif k in (11, 12):
            name = next((fv.decode() for fk, fv in _fields(v) if fk == 1), "")
            (inputs if k == 11 else outputs).append(name)
    return nodes, inputs, outputs


def _device_weights(wq, q):
    """How many output channels of quantized weights `wq` the device's `--weights max`
    reproduces exactly: those whose largest code is +-M (then its step max|w|/M is the step)."""
    s = q.clip.reshape(-1)
    m = q.max_code()
    w = wq.detach().double().reshape(wq.shape[0], -1)
    top = (w.abs().max(dim=1).values * m / torch.where(s > 0, s, torch.ones_like(s))).round()
    return int(((top == m) | (s <= 0)).sum()), wq.shape[0]


@torch.no_grad()
def export(model, example_input, onnx_path, table_path, input_name="input",
           output_name="output", opset=13):
    """Writes the model as ONNX and its activation clips as a calibration table.

    The ONNX file holds the weights already quantized (each QuantConv2d/QuantLinear's weights
    passed through its weight quantizer), every activation FakeQuantize as an Identity node (the
    importer removes it) and nothing else of the quantizers. The table (octasim's form, what
    `octasim net --calibration-table` reads) has one entry per activation quantizer:
    {"clip", "bits", "unsigned", "min", "max", "offset": 0, "method"}, keyed by the ONNX names
    of the tensor the quantizer reads and of the one it writes (whichever the importer keeps).

    Run it with octasim.net(onnx_path, images, precision="int4" (or "int8"),
    calibration_table=table_path, weights="max", no_winograd=True): with weights "max" the
    device's per-channel step is max|w|/M, which is the trained step whenever a channel's
    largest code is +-M (the summary says how many channels are); Winograd mode would quantize
    transformed weights instead. The quantizers must use the device grid and per-tensor
    activation clips with the bits the device gives each tensor at that precision (at int4:
    4-bit unsigned after a ReLU, 8-bit for the network input and other tensors).

    Returns a summary: {"activations": [(tensor, clip, bits, unsigned)], "weights":
    {layer: (channels reproduced exactly, channels)}}.
    """
    m = copy.deepcopy(model).cpu().eval()
    for q in quantizers(m):
        if q.grid != "device":
            raise Error("export: a quantizer uses grid 'octav', which the device cannot hold "
                        "(use grid='device')")
    summary = {"activations": [], "weights": {}}
    for name, mod in m.named_modules():
        if isinstance(mod, (QuantConv2d, QuantLinear)) and mod.weight_quant.enabled:
            wq = mod.weight_quant(mod.weight)
            summary["weights"][name] = _device_weights(wq, mod.weight_quant)
            mod.weight.copy_(wq)
            mod.weight_quant.enabled = False
    log = []
    acts = [q for q in quantizers(m, "activation") if q.enabled]
    for q in acts:
        q._export_log = log  # pylint: disable=protected-access
    torch.onnx.export(m, example_input.cpu(), os.fspath(onnx_path), opset_version=opset,
                      input_names=[input_name], output_names=[output_name],
                      dynamic_axes={input_name: {0: "batch"}, output_name: {0: "batch"}},
                      do_constant_folding=True)
    nodes, _, _ = onnx_nodes(onnx_path)
    marks = [n for n in nodes if n["op_type"] == "Identity"]
    if len(marks) != len(log):
        raise Error(f"export: {len(log)} activation quantizers ran but the ONNX graph has "
                    f"{len(marks)} Identity nodes (the model must not hold other Identity ops)")
    table = {}
    for n, q in zip(marks, log):
        entry = {"clip": float(q.clip), "bits": q.bits, "unsigned": q.unsigned,
                 "min": float(q.seen_min) if math.isfinite(float(q.seen_min)) else 0.0,
                 "max": float(q.seen_max) if math.isfinite(float(q.seen_max)) else 0.0,
                 "offset": 0, "method": f"octasim.torch {q.method}"}
        for key in (n["inputs"][0], n["outputs"][0]):
            if key in table and table[key]["clip"] != entry["clip"]:
                raise Error(f"export: tensor '{key}' has two activation quantizers")
            table[key] = entry
        summary["activations"].append((n["outputs"][0], entry["clip"], q.bits, q.unsigned))
    with open(table_path, "w") as f:
        json.dump(table, f, indent=1)
    return summary
