#!/usr/bin/python3
"""Trains octasim's small Fashion-MNIST CNN once and exports it to ONNX (opset 13).

Reads Debian's dataset-fashion-mnist IDX files (/usr/share/datasets/fashion-mnist/*.gz) with
gzip + numpy, trains on CPU with Debian's python3-torch (offline), folds the input scaling into
conv1, checks the folded model against the trained one, exports `fashion_cnn.onnx` and prints the
FP32 top-1 accuracy on the 10,000-image test set. See README.md beside this file.

The exported graph takes RAW pixel values 0..255 (float32, N x 1 x 28 x 28) and uses only
operators NVDLA's DLA runs: Conv, BatchNormalization (folded into the conv by octasim's importer
or already by the exporter), Relu, MaxPool, LRN, Flatten (a no-op for the DLA) and Gemm. It
outputs logits (no Softmax).
"""

import argparse
import gzip
import os
import random
import struct
import sys
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

DATA_DIR = "/usr/share/datasets/fashion-mnist"
SEED = 15
LRN_SIZE, LRN_ALPHA, LRN_BETA, LRN_K = 5, 1e-4, 0.75, 2.0


def read_idx(path):
    """An IDX file (plain or gzip) as a numpy array; only unsigned bytes (type 0x08) here."""
    with open(path, "rb") as f:
        raw = f.read()
    if raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    if len(raw) < 4 or raw[0] != 0 or raw[1] != 0:
        sys.exit(f"{path}: expected the IDX magic 00 00 <type> <ndims>")
    if raw[2] != 0x08:
        sys.exit(f"{path}: expected unsigned bytes (type 0x08), got type 0x{raw[2]:02x}")
    ndims = raw[3]
    dims = struct.unpack(">" + "I" * ndims, raw[4:4 + 4 * ndims])
    count = int(np.prod(dims))
    data = np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * ndims)
    if data.size != count:
        sys.exit(f"{path}: expected {count} data bytes for shape {dims}, got {data.size}")
    return data.reshape(dims)


def load_split(prefix):
    images = read_idx(os.path.join(DATA_DIR, f"{prefix}-images-idx3-ubyte.gz"))
    labels = read_idx(os.path.join(DATA_DIR, f"{prefix}-labels-idx1-ubyte.gz"))
    x = torch.from_numpy(images.astype(np.float32)).unsqueeze(1)  # N x 1 x 28 x 28, 0..255
    y = torch.from_numpy(labels.astype(np.int64))
    return x, y


class LrnOnnx(torch.autograd.Function):
    """torch.nn.LocalResponseNorm's arithmetic, exported as ONE ONNX LRN node (torch 1.13's
    exporter would otherwise decompose F.local_response_norm into Pow/Pad/AveragePool/...)."""

    @staticmethod
    def forward(ctx, x):  # pylint: disable=arguments-differ
        return F.local_response_norm(x, LRN_SIZE, LRN_ALPHA, LRN_BETA, LRN_K)

    @staticmethod
    def symbolic(g, x):
        return g.op("LRN", x, size_i=LRN_SIZE, alpha_f=LRN_ALPHA, beta_f=LRN_BETA, bias_f=LRN_K)


class FashionCnn(nn.Module):
    """`input_scale` multiplies the input before conv1 (1/255 while training; 1 once folded)."""

    def __init__(self, input_scale):
        super().__init__()
        self.input_scale = input_scale
        self.conv1 = nn.Conv2d(1, 16, 3, padding=1)
        self.bn1 = nn.BatchNorm2d(16)
        self.conv2 = nn.Conv2d(16, 32, 3, padding=1)
        self.fc1 = nn.Linear(32 * 7 * 7, 64)
        self.fc2 = nn.Linear(64, 10)
        self.flatten = nn.Flatten()
        self.export_lrn = False

    def lrn(self, x):
        if self.export_lrn:
            return LrnOnnx.apply(x)
        return F.local_response_norm(x, LRN_SIZE, LRN_ALPHA, LRN_BETA, LRN_K)

    def forward(self, x):
        if self.input_scale != 1.0:
            x = x * self.input_scale
        x = F.max_pool2d(F.relu(self.bn1(self.conv1(x))), 2)
        x = self.lrn(x)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        x = F.relu(self.fc1(self.flatten(x)))
        return self.fc2(x)


def evaluate(model, x, y, batch=1000):
    model.eval()
    correct = 0
    logits = []
    with torch.no_grad():
        for i in range(0, x.shape[0], batch):
            out = model(x[i:i + batch])
            logits.append(out)
            correct += int((out.argmax(1) == y[i:i + batch]).sum())
    return correct / x.shape[0], torch.cat(logits)


def train(model, x, y, epochs, batch, lr):
    gen = torch.Generator().manual_seed(SEED)
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    steps = epochs * ((x.shape[0] + batch - 1) // batch)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=lr, total_steps=steps)
    for epoch in range(epochs):
        model.train()
        start = time.time()
        perm = torch.randperm(x.shape[0], generator=gen)
        total = 0.0
        for i in range(0, x.shape[0], batch):
            idx = perm[i:i + batch]
            xb = x[idx]
            # Horizontal flips (garments are left-right symmetric), drawn from the seeded generator.
            flip = torch.rand(xb.shape[0], generator=gen) < 0.5
            xb = torch.where(flip[:, None, None, None], xb.flip(3), xb)
            loss = F.cross_entropy(model(xb), y[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
            sched.step()
            total += float(loss) * xb.shape[0]
        print(f"epoch {epoch + 1}/{epochs}: loss {total / x.shape[0]:.4f} "
              f"({time.time() - start:.0f} s)", flush=True)


def folded_copy(model):
    """The same network taking raw 0..255 pixels: conv1's weights scaled by input_scale (the bias
    is unchanged: the scaling has no offset, so zero padding stays exact)."""
    folded = FashionCnn(input_scale=1.0)
    folded.load_state_dict(model.state_dict())
    with torch.no_grad():
        folded.conv1.weight.mul_(model.input_scale)
    folded.eval()
    return folded


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--epochs", type=int, default=12)
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--lr", type=float, default=3e-3)
    here = os.path.dirname(os.path.abspath(__file__))
    ap.add_argument("--out", default=os.path.join(here, "fashion_cnn.onnx"))
    ap.add_argument("--dump", help="directory for the first test images, their labels and torch's "
                    "logits of the folded model (images.npy, labels.npy, logits.npy)")
    ap.add_argument("--dump-count", type=int, default=100)
    args = ap.parse_args()

    torch.set_num_threads(2)
    random.seed(SEED)
    np.random.seed(SEED)
    torch.manual_seed(SEED)
    torch.use_deterministic_algorithms(True)
    print(f"torch {torch.__version__}, numpy {np.__version__}, seed {SEED}", flush=True)

    x_train, y_train = load_split("train")
    x_test, y_test = load_split("t10k")
    model = FashionCnn(input_scale=1.0 / 255.0)
    train(model, x_train, y_train, args.epochs, args.batch, args.lr)

    acc, logits = evaluate(model, x_test, y_test)
    folded = folded_copy(model)
    acc_folded, logits_folded = evaluate(folded, x_test, y_test)
    rel = float((logits_folded - logits).abs().max() / logits.abs().max())
    print(f"folded vs unfolded logits: max |diff| / max |logit| = {rel:.3g}")
    if rel > 1e-4 or acc_folded != acc:
        sys.exit(f"folding the input scale changed the model (relative {rel:.3g}, "
                 f"accuracy {acc:.4f} -> {acc_folded:.4f})")

    folded.export_lrn = True
    torch.onnx.export(folded, x_test[:1], args.out, opset_version=13,
                      input_names=["input"], output_names=["logits"],
                      dynamic_axes={"input": {0: "batch"}, "logits": {0: "batch"}},
                      do_constant_folding=True)
    params = sum(p.numel() for p in folded.parameters())
    print(f"parameters: {params}; wrote {args.out} ({os.path.getsize(args.out)} bytes)")

    if args.dump:
        os.makedirs(args.dump, exist_ok=True)
        n = args.dump_count
        np.save(os.path.join(args.dump, "images.npy"), x_test[:n].numpy())
        np.save(os.path.join(args.dump, "logits.npy"), logits_folded[:n].numpy())
        np.save(os.path.join(args.dump, "labels.npy"), y_test[:n].numpy())
    print(f"FP32 top-1 on the {x_test.shape[0]}-image test set: {acc * 100:.2f}% "
          f"({round(acc * x_test.shape[0])}/{x_test.shape[0]})")


if __name__ == "__main__":
    main()
