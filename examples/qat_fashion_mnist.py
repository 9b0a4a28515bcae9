#!/usr/bin/python3
"""4-bit quantization-aware training with OCTAV + MAD on Fashion-MNIST, then the trained model
on the device.

    cmake --build build --target octasim octasim_python_core octasim_python
    PYTHONPATH=$PWD/build/python examples/qat_fashion_mnist.py [--device-images 500]

Needs Debian's python3-torch and dataset-fashion-mnist (/usr/share/datasets/fashion-mnist).
Steps, all on the CPU with torch.set_num_threads(2) (--threads):
  1. FP32: a small CNN (conv 1->16, conv 16->32, fc 1568->64, fc 64->10, ReLUs and 2x2 max
     pools) trained on the 60,000 training images.
  2. PTQ at 4 bits, quantized as `octasim net --precision int4` quantizes it: weights 4-bit per
     output channel (codes -7..7), ReLU outputs 4-bit unsigned (codes 0..15), the input and the
     logits 8-bit; activation clips calibrated on FP32 activations of 1,000 training images,
     by max scaling ("PTQ max") or by OCTAV ("PTQ OCTAV").
  3. QAT at the same 4 bits, initialised by the QAT-init recipe (MMSE weights, MSE saturation
     clips), OCTAV clips recomputed on every batch (octasim.clip) and the MAD gradient
     ("QAT OCTAV+MAD"), or the same with the straight-through estimator ("QAT STE").
     A control row: the FP32 model trained the same extra epochs in FP32, then PTQ OCTAV.
  4. The QAT OCTAV+MAD model exported to ONNX + calibration table and run with octasim.net on
     the functional device (--device-images test images; its own check compares the device
     with octasim's quantized reference executor).
Accuracies are top-1 on the 10,000 test images (the device row: on the first N of them, with
the torch fake-quant model's accuracy on the same N beside it).
"""

import argparse
import gzip
import os
import struct
import sys
import tempfile
import time

# torch's OpenMP threads sleep instead of spinning while they wait: on 2 cores that other jobs
# share, spinning threads made an epoch about twice as slow (set before torch loads libgomp).
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

try:
    import numpy as np
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
except ImportError as e:
    sys.exit(f"qat_fashion_mnist.py needs NumPy and PyTorch (Debian python3-torch): {e}")

import octasim
import octasim.torch as ot

DATA_DIR = "/usr/share/datasets/fashion-mnist"


def read_idx(path):
    """An IDX file (gzip) of unsigned bytes as a NumPy array."""
    with open(path, "rb") as f:
        raw = gzip.decompress(f.read())
    if raw[:3] != b"\x00\x00\x08":
        sys.exit(f"{path}: expected an IDX file of unsigned bytes")
    dims = struct.unpack(">" + "I" * raw[3], raw[4:4 + 4 * raw[3]])
    return np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * raw[3]).reshape(dims)


def load(prefix):
    x = read_idx(os.path.join(DATA_DIR, f"{prefix}-images-idx3-ubyte.gz"))
    y = read_idx(os.path.join(DATA_DIR, f"{prefix}-labels-idx1-ubyte.gz"))
    return (torch.from_numpy(x.astype(np.float32) / 255.0).unsqueeze(1),
            torch.from_numpy(y.astype(np.int64)))


class Net(nn.Module):
    """The CNN with a fake-quantizer wherever the device quantizes at --precision int4."""

    def __init__(self, estimator="mad"):
        super().__init__()
        act = dict(grid="device", estimator=estimator)
        self.q_in = ot.FakeQuantize(bits=8, unsigned=True, **act)  # input: 8-bit, 0..127
        self.conv1 = ot.QuantConv2d(1, 16, 3, padding=1, estimator=estimator)
        self.q1 = ot.FakeQuantize(bits=4, unsigned=True, **act)
        self.conv2 = ot.QuantConv2d(16, 32, 3, padding=1, estimator=estimator)
        self.q2 = ot.FakeQuantize(bits=4, unsigned=True, **act)
        self.fc1 = ot.QuantLinear(32 * 7 * 7, 64, estimator=estimator)
        self.q3 = ot.FakeQuantize(bits=4, unsigned=True, **act)
        self.fc2 = ot.QuantLinear(64, 10, estimator=estimator)
        self.q_out = ot.FakeQuantize(bits=8, unsigned=False, **act)  # logits: 8-bit signed

    def forward(self, x):  # pylint: disable=arguments-differ
        x = self.q_in(x)
        x = F.max_pool2d(self.q1(F.relu(self.conv1(x))), 2)
        x = F.max_pool2d(self.q2(F.relu(self.conv2(x))), 2)
        x = self.q3(F.relu(self.fc1(torch.flatten(x, 1))))
        return self.q_out(self.fc2(x))


def accuracy(model, x, y, batch=1000):
    model.eval()
    correct = 0
    with torch.no_grad():
        for i in range(0, x.shape[0], batch):
            correct += int((model(x[i:i + batch]).argmax(1) == y[i:i + batch]).sum())
    return correct / x.shape[0]


def train(model, x, y, epochs, lr, seed, label):
    gen = torch.Generator().manual_seed(seed)
    opt = torch.optim.Adam([p for p in model.parameters() if p.requires_grad], lr=lr)
    batch = 128
    steps = epochs * ((x.shape[0] + batch - 1) // batch)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=lr, total_steps=steps)
    for epoch in range(epochs):
        model.train()
        start, total = time.time(), 0.0
        perm = torch.randperm(x.shape[0], generator=gen)
        for i in range(0, x.shape[0], batch):
            idx = perm[i:i + batch]
            xb = x[idx]
            flip = torch.rand(xb.shape[0], generator=gen) < 0.5
            xb = torch.where(flip[:, None, None, None], xb.flip(3), xb)
            loss = F.cross_entropy(model(xb), y[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
            sched.step()
            total += float(loss) * xb.shape[0]
        print(f"  {label} epoch {epoch + 1}/{epochs}: loss {total / x.shape[0]:.4f} "
              f"({time.time() - start:.0f} s)", flush=True)


def copy_of(model, estimator):
    m = Net(estimator)
    m.load_state_dict(model.state_dict())
    return m


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--fp32-epochs", type=int, default=3)
    ap.add_argument("--qat-epochs", type=int, default=1)
    ap.add_argument("--threads", type=int, default=2,
                    help="torch threads (1 is faster on a machine other jobs keep busy)")
    ap.add_argument("--device-images", type=int, default=500,
                    help="test images run on the functional device")
    ap.add_argument("--calib-images", type=int, default=1000)
    ap.add_argument("--init", choices=["recipe", "fp32"], default="recipe",
                    help="QAT starts from the QAT-init recipe (default) or the FP32 weights")
    ap.add_argument("--out", default=None, help="keep the exported model and table here")
    args = ap.parse_args()
    if not os.path.isdir(DATA_DIR):
        sys.exit(f"{DATA_DIR}: not found (Debian's dataset-fashion-mnist)")
    torch.set_num_threads(args.threads)
    torch.manual_seed(17)
    t0 = time.time()
    x_train, y_train = load("train")
    x_test, y_test = load("t10k")
    calib = x_train[:args.calib_images]
    rows = []

    print("FP32 training", flush=True)
    fp32 = Net()
    ot.configure(fp32, enabled=False)
    train(fp32, x_train, y_train, args.fp32_epochs, 3e-3, 1, "FP32")
    rows.append(("FP32", accuracy(fp32, x_test, y_test)))

    for method, label in (("max", "PTQ max"), ("octav", "PTQ OCTAV")):
        ptq = copy_of(fp32, "mad")
        ot.configure(ptq, role="weight", method=method)
        ot.calibrate(ptq, calib, method=method, fp32=True)
        rows.append((f"{label} (4-bit)", accuracy(ptq, x_test, y_test)))
        print(f"{label}: {rows[-1][1]:.4f}", flush=True)

    # Control: QAT trains --qat-epochs more than the FP32 model the PTQ rows quantize; the same
    # extra epochs in FP32, then PTQ OCTAV, tell what the extra training alone gives.
    longer = copy_of(fp32, "mad")
    ot.configure(longer, enabled=False)
    train(longer, x_train, y_train, args.qat_epochs, 1e-3, 2, "FP32 control")
    longer_fp32 = accuracy(longer, x_test, y_test)
    ot.configure(longer, enabled=True)
    ot.calibrate(longer, calib, method="octav", fp32=True)
    rows.append((f"PTQ OCTAV (4-bit) of the FP32 model trained {args.qat_epochs} epoch(s) more "
                 f"(FP32 {100 * longer_fp32:.2f}%)", accuracy(longer, x_test, y_test)))
    print(f"{rows[-1][0]}: {rows[-1][1]:.4f}", flush=True)

    qat_models = {}
    for estimator, label in (("mad", "QAT OCTAV+MAD"), ("ste", "QAT OCTAV+STE")):
        qat = copy_of(fp32, estimator)
        if args.init == "recipe":
            batches = [calib[i:i + 250] for i in range(0, calib.shape[0], 250)]
            ot.qat_init(qat, batches, candidates=100)
        print(f"{label} training (init: {args.init})", flush=True)
        train(qat, x_train, y_train, args.qat_epochs, 1e-3, 2, label)
        rows.append((f"{label} (4-bit)", accuracy(qat, x_test, y_test)))
        qat_models[estimator] = qat

    qat = qat_models["mad"]
    n = min(args.device_images, x_test.shape[0])
    with tempfile.TemporaryDirectory(prefix="qat_fashion_") as tmp:
        out_dir = args.out or tmp
        os.makedirs(out_dir, exist_ok=True)
        onnx_path = os.path.join(out_dir, "qat_fashion.onnx")
        table_path = os.path.join(out_dir, "qat_fashion_calibration.json")
        summary = ot.export(qat, x_test[:1], onnx_path, table_path)
        for layer, (exact, channels) in summary["weights"].items():
            print(f"export: {layer}: {exact}/{channels} channels reproduced exactly by "
                  "--weights max")
        start = time.time()
        outputs, report = octasim.net(onnx_path, x_test[:n].numpy(), precision="int4",
                                      calibration_table=table_path, weights="max",
                                      no_winograd=True, functional=True)
        device_time = time.time() - start
    dev_pred = outputs.argmax(1)
    labels = y_test[:n].numpy()
    with torch.no_grad():
        qat.eval()
        torch_pred = qat(x_test[:n]).argmax(1).numpy()
    device_acc = float((dev_pred == labels).mean())
    rows.append((f"on device (QAT OCTAV+MAD, {n} test images)", device_acc))

    print()
    print("| model | top-1 |")
    print("|---|---:|")
    for name, acc in rows:
        print(f"| {name} | {100 * acc:.2f}% |")
    print()
    print(f"device: {n} images on the functional device in {device_time:.1f} s; torch fake-quant "
          f"model on the same images {100 * float((torch_pred == labels).mean()):.2f}%, "
          f"same top-1 as the device on {int((dev_pred == torch_pred).sum())}/{n}; "
          f"{report['result'].get('trace_cycles', report.get('cycles', '?'))} cycles per "
          "inference on nv_small")
    print(f"total time {time.time() - t0:.0f} s")


if __name__ == "__main__":
    main()
