#!/usr/bin/python3
"""octasim.torch (PYTHONPATH=build/python) against octasim's C++ code, hand-worked values and
the device. Exits 77 (skipped) when PyTorch (Debian python3-torch) is absent.

usage: torch_test.py CHECK WORK_DIR
  forward    FakeQuantize's forward equals octasim.quantize with the clip octasim.clip gives
             (grid "octav"), and the device's codes (firmware/net/quant.hpp, worked here in
             NumPy) times its step (grid "device"); per tensor and per channel; the running clip
  backward   MAD / PWL / STE backward equals models/quant/gradients.cpp's derivatives, worked by
             hand on small tensors, through torch.autograd (also a QuantLinear's weights)
  scaler     the dynamic loss scaler halves and skips on Inf/NaN, doubles after N clean steps;
             with FP16 gradients, scaling keeps a gradient FP16 would flush to zero
  qat_init   the QAT-init recipe: MMSE weights, the patent's activation quantizer and its
             offset / saturation search, qat_init on a model
  export     a tiny trained model exported to ONNX + calibration table and run by `octasim net`
             on the functional device: outputs within the quantization bound of the torch
             fake-quant model; the device uses the table's clips; and PTQ clips from
             octasim.torch.calibrate equal the device's own OCTAV calibration
"""
import json
import math
import os
import sys

try:
    import numpy as np
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
except ImportError as e:
    print(f"SKIP: PyTorch (Debian python3-torch) is not installed ({e})")
    sys.exit(77)

import octasim
import octasim.torch as ot

CHECK, WORK = sys.argv[1], sys.argv[2]
os.makedirs(WORK, exist_ok=True)
torch.manual_seed(1717)
failures = []
checks = 0


def expect(cond, what):
    global checks
    checks += 1
    if not cond:
        failures.append(what)


# The device's code formats, from firmware/net/quant.hpp's comment and TensorQuant::max_code /
# calibrator_bits: (bits, unsigned) -> (M, the bits OCTAV is given).
DEVICE_FORMATS = {(4, True): (15, 4), (4, False): (7, 4), (8, True): (127, 7),
                  (8, False): (127, 8)}


def device_codes(x, s, m, unsigned):
    """quant.hpp TensorQuant::code: round half away from zero of x / (s / M), clamped."""
    step = s / m
    v = x.astype(np.float64) / step
    r = np.where(v < 0, -np.floor(-v + 0.5), np.floor(v + 0.5))
    return np.clip(r, 0 if unsigned else -m, m), step


# ---------------------------------------------------------------------------------------------

def check_forward():
    rng = np.random.default_rng(17)
    data = {
        "normal": rng.standard_normal((4, 6, 5, 5)).astype(np.float32),
        "relu": np.maximum(rng.standard_normal((4, 6, 5, 5)) * 2.0, 0).astype(np.float32),
        "heavy": rng.standard_t(3, (5, 40)).astype(np.float32),
    }
    # grid "octav": octasim.quantize with octasim.clip's clip.
    for name, a in data.items():
        for bits in (2, 3, 4, 8):
            for unsigned in (False, True):
                for axis in (None, 0, 1):
                    q = ot.FakeQuantize(bits=bits, unsigned=unsigned, per_channel=axis,
                                        grid="octav", role="weight")
                    y = q(torch.from_numpy(a)).numpy()
                    s = octasim.clip(a, bits=bits, unsigned=unsigned, per_channel=axis,
                                     max_iter=50)
                    s_b = s if axis is None else s.reshape(
                        [-1 if d == axis else 1 for d in range(a.ndim)])
                    want = octasim.quantize(a, s_b, bits, unsigned)
                    tag = f"octav grid {name} bits {bits} unsigned {unsigned} axis {axis}"
                    expect(np.array_equal(y, want), f"{tag}: forward != octasim.quantize")
                    expect(np.array_equal(q.clip.numpy().reshape(np.shape(s)), s),
                           f"{tag}: stored clip != octasim.clip")
    # grid "device": the device's codes times its step, the clip OCTAV's at the bits the
    # network compiler gives it.
    for name, a in data.items():
        for (bits, unsigned), (m, cbits) in DEVICE_FORMATS.items():
            for axis in (None, 0):
                q = ot.FakeQuantize(bits=bits, unsigned=unsigned, per_channel=axis,
                                    grid="device", role="weight")
                y = q(torch.from_numpy(a)).numpy()
                s = octasim.clip(a, bits=cbits, unsigned=unsigned, per_channel=axis, max_iter=50)
                s_b = s if axis is None else s.reshape([-1] + [1] * (a.ndim - 1))
                codes, step = device_codes(a, s_b, m, unsigned)
                want = (codes * step).astype(np.float32)
                tag = f"device grid {name} bits {bits} unsigned {unsigned} axis {axis}"
                expect(np.array_equal(y, want), f"{tag}: forward != device codes * step")
                expect(len(np.unique(codes)) <= (m + 1 if unsigned else 2 * m + 1),
                       f"{tag}: more levels than the device has")
    # Hand-worked device codes: 4-bit unsigned, s = 1.5 (step 0.1): 0.05 is a tie -> 1 (away
    # from zero), 0.149 -> 1, 0.25 -> 3 (tie away: 2.5 -> 3), 2.0 -> 15 (clamped), -1 -> 0.
    x = torch.tensor([0.05, 0.149, 0.25, 2.0, -1.0], dtype=torch.float64)
    y = ot.quantize_tensor(x, 1.5, bits=4, unsigned=True, grid="device")
    want = torch.tensor([1, 1, 3, 15, 0], dtype=torch.float64) * (1.5 / 15)
    expect(torch.equal(y, want), f"device grid hand-worked: {y.tolist()}")
    # 4-bit signed octav grid, s = 1 (step 1/8): 1/16 -> 0 (half to even), 3/16 -> 2/8,
    # -5 -> -8/8 (the eq. 3 grid reaches +-s).
    x = torch.tensor([1 / 16, 3 / 16, -5.0], dtype=torch.float64)
    y = ot.quantize_tensor(x, 1.0, bits=4, unsigned=False, grid="octav")
    expect(torch.equal(y, torch.tensor([0.0, 0.25, -1.0], dtype=torch.float64)),
           f"octav grid hand-worked: {y.tolist()}")
    # Activation role: training batches update a running clip (momentum 0.1), eval uses it.
    a1 = torch.from_numpy(data["relu"])
    a2 = a1 * 3.0
    q = ot.FakeQuantize(bits=4, unsigned=True, momentum=0.1)
    q.train()
    q(a1)
    q(a2)
    s1 = float(octasim.clip(a1.numpy(), bits=4, unsigned=True, max_iter=50))
    s2 = float(octasim.clip(a2.numpy(), bits=4, unsigned=True, max_iter=50))
    expect(math.isclose(float(q.clip), 0.9 * s1 + 0.1 * s2, rel_tol=1e-12),
           f"running clip {float(q.clip)} != 0.9 * {s1} + 0.1 * {s2}")
    q.eval()
    y = q(a2).numpy()
    codes, step = device_codes(a2.numpy(), float(q.clip), 15, True)
    expect(np.array_equal(y, (codes * step).astype(np.float32)), "eval does not use the clip")
    # Bad arguments raise octasim.Error.
    for kwargs in ({"grid": "nope"}, {"bits": 5, "grid": "device"}, {"estimator": "x"},
                   {"role": "bias"}, {"bits": 1, "grid": "octav"}):
        try:
            ot.FakeQuantize(**kwargs)
            expect(False, f"FakeQuantize({kwargs}) did not raise")
        except octasim.Error:
            expect(True, "")


def check_backward():
    x0 = [-3.0, -1.0, -0.5, 0.0, 0.5, 1.5, 2.0, 4.0]
    g0 = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0]
    # dQ/dx at s = 2 (models/quant/gradients.cpp): MAD s/|x| beyond the range (2/3 at -3,
    # 1/2 at 4); PWL 0 there; unsigned: 0 for x < 0 under MAD and PWL; STE 1 everywhere.
    worked = {
        ("mad", False): [2 / 3, 1, 1, 1, 1, 1, 1, 0.5],
        ("pwl", False): [0, 1, 1, 1, 1, 1, 1, 0],
        ("ste", False): [1] * 8,
        ("mad", True): [0, 0, 0, 1, 1, 1, 1, 0.5],
        ("pwl", True): [0, 0, 0, 1, 1, 1, 1, 0],
        ("ste", True): [1] * 8,
    }
    for (est, unsigned), d in worked.items():
        for grid, bits in (("device", 4), ("octav", 3)):
            q = ot.FakeQuantize(bits=bits, unsigned=unsigned, grid=grid, estimator=est)
            q.clip = torch.tensor(2.0, dtype=torch.float64)
            q.frozen = True
            q.train()
            x = torch.tensor(x0, dtype=torch.float32, requires_grad=True)
            (gx,) = torch.autograd.grad(q(x), x, torch.tensor(g0))
            want = torch.tensor([g * v for g, v in zip(g0, d)], dtype=torch.float64).float()
            expect(torch.equal(gx, want),
                   f"{est} unsigned {unsigned} grid {grid}: {gx.tolist()} != {want.tolist()}")
    # Per channel: rows with s = 1 and s = 4; MAD gives s/|x| of each row's own s.
    q = ot.FakeQuantize(bits=4, per_channel=0, role="activation", estimator="mad")
    q.clip = torch.tensor([[1.0], [4.0]], dtype=torch.float64)
    q.frozen = True
    x = torch.tensor([[0.5, -2.0, 8.0], [0.5, -2.0, 8.0]], requires_grad=True)
    (gx,) = torch.autograd.grad(q(x).sum(), x)
    expect(torch.equal(gx, torch.tensor([[1.0, 0.5, 0.125], [1.0, 1.0, 0.5]])),
           f"per-channel MAD: {gx.tolist()}")
    # A QuantLinear's weight gradient: dL/dWq (autograd through F.linear with Wq a leaf) times
    # MAD(W, s_k) with the layer's per-output-channel OCTAV clips.
    lin = ot.QuantLinear(16, 3, estimator="mad")
    with torch.no_grad():
        lin.weight.mul_(4.0)  # some weights beyond the clip
    xin = torch.randn(5, 16)
    out = lin(xin)
    loss = (out ** 2).sum()
    (gw,) = torch.autograd.grad(loss, lin.weight)
    s = octasim.clip(lin.weight.detach().numpy(), bits=4, per_channel=0, max_iter=50)
    expect(np.array_equal(lin.weight_quant.clip.numpy().ravel(), s), "QuantLinear's clips")
    wq = lin.weight_quant(lin.weight).detach().requires_grad_(True)  # the forward's Wq
    loss_q = (F.linear(xin, wq, lin.bias) ** 2).sum()
    (g_wq,) = torch.autograd.grad(loss_q, wq)
    w = lin.weight.detach().double()
    sk = torch.from_numpy(s).reshape(-1, 1)
    mad = torch.where(w.abs() <= sk, torch.ones_like(w), sk / w.abs())
    want = (g_wq.double() * mad).float()
    expect(torch.equal(gw, want), "QuantLinear weight gradient != dL/dWq * MAD(W)")
    expect(bool((mad < 1).any()), "the QuantLinear check clipped no weight")


def check_scaler():
    p = nn.Parameter(torch.tensor([1.0, 2.0]))
    opt = torch.optim.SGD([p], lr=1.0)
    sc = ot.DynamicLossScaler(init_scale=1024.0, growth_interval=3)

    def run(grad):
        opt.zero_grad()
        loss = (p * torch.tensor(grad)).sum()
        sc.scale(loss).backward()
        return sc.step(opt)

    before = p.detach().clone()
    expect(run([0.5, 0.25]), "a clean step was skipped")
    # The gradient was unscaled before the update: p -= lr * g.
    expect(torch.equal(p.detach(), before - torch.tensor([0.5, 0.25])), f"update {p.tolist()}")
    expect(sc.scale_factor == 1024.0 and sc.clean_steps == 1, "scale after one clean step")
    run([0.5, 0.25])
    run([0.5, 0.25])  # third clean step: N = 3 -> doubled
    expect(sc.scale_factor == 2048.0 and sc.clean_steps == 0, f"no growth: {sc.scale_factor}")
    before = p.detach().clone()
    expect(not run([math.inf, 0.0]), "an Inf gradient was not skipped")
    expect(torch.equal(p.detach(), before), "an overflowing step changed the weights")
    expect(sc.scale_factor == 1024.0 and sc.skipped == 1, f"no halving: {sc.scale_factor}")
    run([0.5, 0.25])
    run([0.5, 0.25])
    expect(not run([math.nan, 1.0]), "a NaN gradient was not skipped")
    expect(sc.scale_factor == 512.0 and sc.clean_steps == 0,
           f"NaN: scale {sc.scale_factor}, clean {sc.clean_steps} (the count restarts)")
    # Overflow from the scaling itself: FP16 gradients of a large loss times S overflow to Inf.
    p16 = nn.Parameter(torch.tensor([1.0], dtype=torch.float16))
    masters = ot.MasterWeights([p16])
    opt16 = torch.optim.SGD(masters.masters, lr=1.0)
    sc16 = ot.DynamicLossScaler(init_scale=2.0 ** 16, growth_interval=1000)
    loss = (p16 * torch.tensor([4.0], dtype=torch.float16)).sum()
    sc16.scale(loss).backward()  # 4 * 65536 > 65504: Inf in FP16
    stepped = sc16.step(opt16, masters)
    expect(not stepped and sc16.scale_factor == 2.0 ** 15, "FP16 overflow not detected")
    # Underflow: d/dp of 1e-4 * (1e-4 * p) is 1e-8, below FP16's smallest subnormal
    # (6e-8): unscaled it flushes to 0, scaled by 2^15 it survives, and the FP32 master gets it
    # back after unscaling.
    p16.grad = None
    loss = ((p16 * 1e-4) * 1e-4).sum()
    loss.backward()
    expect(float(p16.grad) == 0.0, f"FP16 kept a 1e-8 gradient unscaled: {float(p16.grad)}")
    p16.grad = None
    sc16.scale((p16 * 1e-4) * 1e-4).sum().backward()
    stepped = sc16.step(opt16, masters)
    g = float(masters.masters[0].grad)
    expect(stepped and 0.9e-8 < g < 1.1e-8, f"scaled FP16 gradient lost: master grad {g}")
    expect(float(p16) == float(torch.tensor(1.0 - g).half()), f"model weight {float(p16)}")
    expect(masters.masters[0].dtype == torch.float32 and p16.dtype == torch.float16,
           "master weights are not FP32")
    try:
        ot.DynamicLossScaler(backoff=2.0)
        expect(False, "a backoff of 2 was accepted")
    except octasim.Error:
        expect(True, "")


def check_qat_init():
    # MMSE: weights exactly on a 4-bit grid come back exactly (models/quant tests' case).
    w = 0.25 * np.arange(-8, 8, dtype=np.float32)
    a, q, mse = ot.mmse_weight_quantization(w, 4)
    expect(a == 0.25 and mse == 0.0 and np.array_equal(q, np.arange(-8, 8)), f"MMSE {a} {q}")
    rng = np.random.default_rng(3)
    w = (rng.standard_normal(5000) * 0.1).astype(np.float32)
    for bits in (2, 4, 8):
        a, q, mse = ot.mmse_weight_quantization(w, bits)
        lo, hi = -(2 ** (bits - 1)), 2 ** (bits - 1) - 1
        expect(q.min() >= lo and q.max() <= hi, f"MMSE codes out of range at {bits} bits")
        wd = w.astype(np.float64)
        expect(math.isclose(mse, np.mean((wd - a * q) ** 2), rel_tol=1e-12), "MMSE mse")
        a_max = np.abs(wd).max() / hi
        q_max = np.clip(np.rint(wd / a_max), lo, hi)
        expect(mse < np.mean((wd - a_max * q_max) ** 2), f"MMSE does not beat max at {bits}")
        expect(math.isclose(a, np.dot(wd, q) / np.dot(q, q), rel_tol=1e-9),
               f"MMSE scale is not least-squares at {bits} bits")
    # The patent's activation quantizer, worked by hand (k = 2: L = 3).
    for args, want in (((0.3, 0.0, 1.0, 2), 1 / 3), ((5.0, 0.0, 1.0, 2), 1.0),
                       ((-2.0, -1.0, 1.0, 2), -1.0), ((0.0, -1.0, 3.0, 2), 0.0)):
        got = float(ot.quantize_activation(*args))
        expect(math.isclose(got, want, abs_tol=1e-15), f"quantize_activation{args} = {got}")
    batches = [(rng.exponential(1.0, 3000) - 0.5).astype(np.float32) for _ in range(4)]
    for b, lo in zip(batches, (-1.0, -0.75, -0.5, -0.75)):
        b[0] = lo
    offset, beta, total = ot.calibrate_activation(batches, 4, 300)
    expect(offset == -0.75, f"offset {offset} != mean of the minima -0.75")
    expect(math.isclose(total, ot.activation_total_mse(batches, offset, beta, 4), rel_tol=1e-12),
           "total MSE")
    for other in (1.0, 2.0, 3.0, 4.0, 6.0, beta * 0.9, beta * 1.1):
        expect(total <= ot.activation_total_mse(batches, offset, other, 4),
               f"beta {beta} is not better than {other}")
    for bad in ([], [np.zeros(0)], [np.array([1.0, np.nan])]):
        try:
            ot.calibrate_activation(bad, 4)
            expect(False, f"calibrate_activation({bad}) did not raise")
        except octasim.Error:
            expect(True, "")
    # qat_init on a model: MMSE weights per output channel (at most 16 levels each: a * q),
    # ReLU activations' clips = the saturation of calibrate_activation on their FP32 values
    # with L = 15 (the device's 4-bit unsigned codes).
    model = TinyNet()
    images = [torch.rand(8, 1, 8, 8) for _ in range(3)]
    seen = []
    h = model.q1.register_forward_pre_hook(lambda m, i: seen.append(i[0].numpy().copy()))
    ot.configure(model, enabled=False)
    with torch.no_grad():
        for b in images:
            model(b)
    h.remove()
    ot.configure(model, enabled=True)
    w_before = model.conv.weight.detach().numpy().copy()
    report = ot.qat_init(model, images, candidates=100)
    for k in range(w_before.shape[0]):
        a, q, _ = ot.mmse_weight_quantization(w_before[k], 4, 100)
        expect(np.allclose(model.conv.weight[k].detach().numpy(),
                           (a * q).reshape(w_before[k].shape), rtol=0, atol=1e-7),
               f"conv channel {k} is not its MMSE quantization")
    _, beta, _ = ot.calibrate_activation(seen, 4, 100)
    expect(math.isclose(float(model.q1.clip), beta, rel_tol=1e-12),
           f"q1 clip {float(model.q1.clip)} != MSE saturation {beta}")
    expect(report["q_out"][2].startswith("octav"), "the signed output did not keep OCTAV")


class TinyNet(nn.Module):
    """input (8-bit) -> conv 3x3 1->4 + ReLU (4-bit) -> max pool -> fc 64->10 (8-bit signed)."""

    def __init__(self):
        super().__init__()
        self.q_in = ot.FakeQuantize(bits=8, unsigned=True)
        self.conv = ot.QuantConv2d(1, 4, 3, padding=1)
        self.q1 = ot.FakeQuantize(bits=4, unsigned=True)
        self.fc = ot.QuantLinear(4 * 4 * 4, 10)
        self.q_out = ot.FakeQuantize(bits=8, unsigned=False)

    def forward(self, x):  # pylint: disable=arguments-differ
        x = self.q_in(x)
        x = F.max_pool2d(self.q1(F.relu(self.conv(x))), 2)
        return self.q_out(self.fc(torch.flatten(x, 1)))


def check_export():
    model = TinyNet()
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    target = torch.randn(10, 64)
    for _ in range(20):  # a few QAT steps: clips from the batches, MAD gradients
        xb = torch.rand(32, 1, 8, 8)
        loss = F.mse_loss(model(xb), xb.reshape(32, -1)[:, :10] @ target[:, :10])
        opt.zero_grad()
        loss.backward()
        opt.step()
    model.eval()
    images = torch.rand(40, 1, 8, 8)
    with torch.no_grad():
        want = model(images).numpy()
    onnx_path, table_path = os.path.join(WORK, "tiny.onnx"), os.path.join(WORK, "tiny.json")
    summary = ot.export(model, images[:1], onnx_path, table_path)
    nodes, inputs, outputs = ot.onnx_nodes(onnx_path)
    expect(inputs == ["input"] and outputs == ["output"], f"graph io {inputs} {outputs}")
    expect([n["op_type"] for n in nodes].count("Identity") == 3, "not 3 quantizer marks")
    expect(all(e == c for e, c in summary["weights"].values()),
           f"weights not reproduced by --weights max: {summary['weights']}")
    with open(table_path) as f:
        table = json.load(f)
    expect(table["input"]["clip"] == float(model.q_in.clip), "input clip in the table")
    used = os.path.join(WORK, "used.json")
    got, _ = octasim.net(onnx_path, images.numpy(), precision="int4",
                         calibration_table=table_path, weights="max", no_winograd=True,
                         functional=True, save_calibration=used)
    expect(got.shape == want.shape, f"device outputs {got.shape} != {want.shape}")
    # The device took every clip from the table.
    with open(used) as f:
        dev = json.load(f)
    for name, entry in dev.items():
        if name in table:
            expect(entry["clip"] == table[name]["clip"] and entry["bits"] == table[name]["bits"]
                   and entry["unsigned"] == table[name]["unsigned"],
                   f"device's '{name}' {entry} != table {table[name]}")
    expect("output" in dev and "input" in dev, f"device tensors {sorted(dev)}")
    # Bound: the input codes are the same on both sides; each hidden code may differ by one step
    # (the device requantizes with a fixed-point scale and a quantized bias), which moves output
    # k by at most sum_j |Wq_kj| * step_h; then both round to the output grid (one step apart
    # at most).
    step_h = float(model.q1.clip) / 15
    step_o = float(model.q_out.clip) / 127
    wq = model.fc.weight_quant(model.fc.weight).detach().double().numpy()
    bound = step_o + np.abs(wq).sum(axis=1) * step_h + 1e-6
    diff = np.abs(got.astype(np.float64) - want.astype(np.float64))
    expect(bool(np.all(diff <= bound[None, :])),
           f"device outputs off by up to {diff.max()} (bound {bound.min()}..{bound.max()})")
    on_grid = np.abs(got / step_o - np.round(got / step_o)).max()
    expect(on_grid < 1e-3, f"device outputs are not on the 8-bit output grid ({on_grid})")
    exact = float(np.mean(np.round(diff / step_o) == 0))
    print(f"export: {100 * exact:.1f}% of outputs equal, max |diff| {diff.max() / step_o:.0f} "
          f"output steps, bound {bound.min() / step_o:.1f}..{bound.max() / step_o:.1f} steps")
    # PTQ clips: calibrate() on FP32 activations (of the quantized weights the ONNX holds) equals
    # the device's own OCTAV calibration on the same images (the input exactly: same data; the hidden tensor within OCTAV's 1e-4
    # tolerance, the reference executor's float sums differing from torch's in the last bits).
    fp = TinyNet()
    fp.load_state_dict(model.state_dict())
    ot.calibrate(fp, images, method="octav", fp32="activations")  # the ONNX's weights are Wq
    ot.export(fp, images[:1], onnx_path, table_path)
    dev_path = os.path.join(WORK, "device_calibration.json")
    octasim.net(onnx_path, images.numpy(), precision="int4", calibration="octav",
                weights="max", no_winograd=True, functional=True, save_calibration=dev_path)
    with open(dev_path) as f:
        dev = json.load(f)
    with open(table_path) as f:
        ours = json.load(f)
    expect(dev["input"]["clip"] == ours["input"]["clip"],
           f"input clip: device {dev['input']['clip']} != calibrate {ours['input']['clip']}")
    hidden = [n for n in dev if n not in ("input", "output") and n in ours]
    expect(len(hidden) >= 1, f"no hidden tensor shared: device {sorted(dev)}, ours {sorted(ours)}")
    for n in hidden + ["output"]:
        expect(math.isclose(dev[n]["clip"], ours[n]["clip"], rel_tol=1e-3),
               f"'{n}' clip: device {dev[n]['clip']} != calibrate {ours[n]['clip']}")
    # A model with the octav grid cannot be exported.
    bad = TinyNet()
    ot.configure(bad, grid="octav")
    bad(images)
    try:
        ot.export(bad, images[:1], onnx_path, table_path)
        expect(False, "an octav-grid model was exported")
    except octasim.Error:
        expect(True, "")


CHECKS = {"forward": check_forward, "backward": check_backward, "scaler": check_scaler,
          "qat_init": check_qat_init, "export": check_export}

if CHECK not in CHECKS:
    sys.exit(f"unknown check '{CHECK}': expected one of {', '.join(CHECKS)}")
CHECKS[CHECK]()
for f in failures:
    print("FAIL:", f)
print(f"{CHECK}: {checks - len(failures)} of {checks} checks passed")
sys.exit(1 if failures else 0)
