#!/usr/bin/env python3
"""Exports the exporter zoo: small ONNX models written by PyTorch's own exporter.

CI never has torch, so the models are exported once and committed with their inputs and
PyTorch's outputs. Regenerate (Debian bookworm, nothing installed):

    eval "$(scripts/unpack-torch.sh | grep ^export)"
    /usr/bin/python3 models/networks/exporter_zoo/export.py            # export + manifest
    /usr/bin/python3 models/networks/exporter_zoo/export.py --check    # verify the files
    /usr/bin/python3 models/networks/exporter_zoo/export.py --full /tmp/full   # full-size, local

Every model is built deterministically (torch.manual_seed and a numpy seed from its name),
put in eval mode, given non-trivial BatchNorm statistics (running_mean ~ N(0, 0.1),
running_var ~ U(0.5, 1.5), weight ~ U(0.5, 1.5), bias ~ N(0, 0.1)), and its Conv/Linear
weights rescaled on a calibration image so every Conv/Linear output has standard deviation 1
(LSUV-style: activations neither blow up nor vanish through deep random networks). It is then
exported as a user would: torch.onnx.export(model, x, f, opset_version=13, input_names,
output_names) with PyTorch's defaults (do_constant_folding=True, training=EVAL). Written per
model: NAME.onnx, NAME_input.npy (float32 1x3x64x64, uniform [0, 1); a model class may set
input_shape / input_distribution instead: bert_encoder's is 1x32x64 standard normal) and
NAME_output.npy (PyTorch's float32 output on it; NAME_output_0.npy, NAME_output_1.npy, ... for
several outputs), and manifest.json (inputs, outputs, the ONNX op census, versions, sizes).
`--only NAME ...` exports (or checks) only those models; the manifest keeps the others' entries.
LayerNorm gets BatchNorm's random affine parameters; nn.MultiheadAttention's q/k/v and output
projections are LSUV-scaled too (normalize_activations).
"""

import argparse
import collections
import hashlib
import io
import json
import math
import os
import re
import sys
import tempfile
import zlib

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torchvision
from torchvision.models import densenet, efficientnet, mnasnet, mobilenetv3, regnet, shufflenetv2
from torchvision.ops.misc import SqueezeExcitation

OPSET = 13
NUM_CLASSES = 10
INPUT_SHAPE = (1, 3, 64, 64)
HERE = os.path.dirname(os.path.abspath(__file__))


# --------------------------------------------------------------------------------------------
# Hand-written models


class AvgPoolDefault(nn.Module):
    """Conv3x3 + ReLU + AvgPool2d(2) + AvgPool2d(3, 1, 1) (count_include_pad=True, a real pad)
    + AvgPool2d(3, 2, 1, count_include_pad=False) (for contrast) + Conv3x3."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 16, 3, padding=1)
        self.relu = nn.ReLU()
        self.pool1 = nn.AvgPool2d(2)
        self.pool2 = nn.AvgPool2d(3, stride=1, padding=1)
        self.pool3 = nn.AvgPool2d(3, stride=2, padding=1, count_include_pad=False)
        self.conv2 = nn.Conv2d(16, 8, 3, padding=1)

    def forward(self, x):
        x = self.relu(self.conv1(x))
        x = self.pool1(x)
        x = self.pool2(x)
        x = self.pool3(x)
        return self.conv2(x)


def conv_bn_act(cin, cout, k, stride=1, groups=1, act=nn.ReLU):
    layers = [nn.Conv2d(cin, cout, k, stride, (k - 1) // 2, groups=groups, bias=False),
              nn.BatchNorm2d(cout)]
    if act is not None:
        layers.append(act())
    return nn.Sequential(*layers)


class MBConv(nn.Module):
    """EfficientNet's MBConv: expand 1x1, depthwise kxk, squeeze-excitation (AdaptiveAvgPool2d
    -> 1x1 conv -> SiLU -> 1x1 conv -> Sigmoid -> multiply), project 1x1 + BN, residual."""

    def __init__(self, cin, cout, expand, k, stride):
        super().__init__()
        mid = cin * expand
        self.expand = conv_bn_act(cin, mid, 1, act=nn.SiLU)
        self.dw = conv_bn_act(mid, mid, k, stride, groups=mid, act=nn.SiLU)
        self.se_pool = nn.AdaptiveAvgPool2d(1)
        self.se_reduce = nn.Conv2d(mid, max(1, cin // 4), 1)
        self.se_act = nn.SiLU()
        self.se_expand = nn.Conv2d(max(1, cin // 4), mid, 1)
        self.se_gate = nn.Sigmoid()
        self.project = conv_bn_act(mid, cout, 1, act=None)
        self.residual = stride == 1 and cin == cout

    def forward(self, x):
        y = self.dw(self.expand(x))
        s = self.se_gate(self.se_expand(self.se_act(self.se_reduce(self.se_pool(y)))))
        y = self.project(y * s)
        return x + y if self.residual else y


class EfficientNetBlock(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = conv_bn_act(3, 16, 3, 2, act=nn.SiLU)
        self.block1 = MBConv(16, 16, 4, 3, 1)
        self.block2 = MBConv(16, 24, 4, 5, 2)
        self.head = conv_bn_act(24, 64, 1, act=nn.SiLU)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(64, NUM_CLASSES)

    def forward(self, x):
        x = self.head(self.block2(self.block1(self.stem(x))))
        return self.fc(torch.flatten(self.pool(x), 1))


class MobileNetV3Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = conv_bn_act(3, 16, 3, 2, act=nn.Hardswish)
        # Inverted residual with ReLU6 and SE (Hardsigmoid gate), residual add.
        self.b1_expand = conv_bn_act(16, 64, 1, act=nn.ReLU6)
        self.b1_dw = conv_bn_act(64, 64, 3, 1, groups=64, act=nn.ReLU6)
        self.b1_se = SqueezeExcitation(64, 16, scale_activation=nn.Hardsigmoid)
        self.b1_project = conv_bn_act(64, 16, 1, act=None)
        # Inverted residual with Hardswish, 5x5 stride 2, SE, no residual.
        self.b2_expand = conv_bn_act(16, 48, 1, act=nn.Hardswish)
        self.b2_dw = conv_bn_act(48, 48, 5, 2, groups=48, act=nn.Hardswish)
        self.b2_se = SqueezeExcitation(48, 16, scale_activation=nn.Hardsigmoid)
        self.b2_project = conv_bn_act(48, 24, 1, act=None)
        self.head = conv_bn_act(24, 96, 1, act=nn.Hardswish)
        self.fc1 = nn.Linear(96, 64)
        self.act = nn.Hardswish()
        self.fc2 = nn.Linear(64, NUM_CLASSES)

    def forward(self, x):
        x = self.stem(x)
        x = x + self.b1_project(self.b1_se(self.b1_dw(self.b1_expand(x))))
        x = self.b2_project(self.b2_se(self.b2_dw(self.b2_expand(x))))
        x = self.head(x)
        x = x.mean((2, 3), keepdim=True)
        return self.fc2(self.act(self.fc1(torch.flatten(x, 1))))


class ShuffleNetBlock(nn.Module):
    """ShuffleNetV2 in miniature, from torchvision's own unit (shufflenetv2.InvertedResidual:
    chunk, branch, cat, channel_shuffle by view/transpose/view) and x.mean([2, 3])."""

    def __init__(self):
        super().__init__()
        self.stem = conv_bn_act(3, 24, 3, 2)
        self.maxpool = nn.MaxPool2d(3, 2, 1)
        self.unit1 = shufflenetv2.InvertedResidual(24, 48, 2)
        self.unit2 = shufflenetv2.InvertedResidual(48, 48, 1)
        self.unit3 = shufflenetv2.InvertedResidual(48, 48, 1)
        self.conv5 = conv_bn_act(48, 128, 1)
        self.fc = nn.Linear(128, NUM_CLASSES)

    def forward(self, x):
        x = self.maxpool(self.stem(x))
        x = self.conv5(self.unit3(self.unit2(self.unit1(x))))
        return self.fc(x.mean([2, 3]))


class DenseLayer(nn.Module):
    """BN-ReLU-Conv1x1-BN-ReLU-Conv3x3 on torch.cat of all previous features; with
    explicit_pad the 3x3 convolution has padding=0 after F.pad(x, (1, 1, 1, 1))."""

    def __init__(self, cin, growth, bn_size, explicit_pad):
        super().__init__()
        self.norm1 = nn.BatchNorm2d(cin)
        self.conv1 = nn.Conv2d(cin, bn_size * growth, 1, bias=False)
        self.norm2 = nn.BatchNorm2d(bn_size * growth)
        self.conv2 = nn.Conv2d(bn_size * growth, growth, 3, padding=0 if explicit_pad else 1, bias=False)
        self.explicit_pad = explicit_pad

    def forward(self, features):
        x = torch.cat(features, 1)
        x = self.conv1(F.relu(self.norm1(x)))
        x = F.relu(self.norm2(x))
        if self.explicit_pad:
            x = F.pad(x, (1, 1, 1, 1))
        return self.conv2(x)


class DenseBlock(nn.Module):
    def __init__(self, layers, cin, growth, bn_size, explicit_pad):
        super().__init__()
        self.layers = nn.ModuleList(
            DenseLayer(cin + i * growth, growth, bn_size, explicit_pad) for i in range(layers))

    def forward(self, x):
        features = [x]
        for layer in self.layers:
            features.append(layer(features))
        return torch.cat(features, 1)


class DenseNetBlock(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = conv_bn_act(3, 16, 3, 2)
        self.block1 = DenseBlock(4, 16, 8, 4, explicit_pad=True)  # 16 + 4 * 8 = 48
        self.transition = nn.Sequential(nn.BatchNorm2d(48), nn.ReLU(), nn.Conv2d(48, 24, 1, bias=False),
                                        nn.AvgPool2d(2))
        self.block2 = DenseBlock(3, 24, 8, 4, explicit_pad=False)  # 24 + 3 * 8 = 48
        self.norm = nn.BatchNorm2d(48)
        self.fc = nn.Linear(48, NUM_CLASSES)

    def forward(self, x):
        x = self.block2(self.transition(self.block1(self.stem(x))))
        x = F.adaptive_avg_pool2d(F.relu(self.norm(x)), 1)
        return self.fc(torch.flatten(x, 1))


class YoloNeck(nn.Module):
    """Backbone of stride-2 Conv-BN-LeakyReLU(0.1), an FPN step (1x1 conv, nn.Upsample x2
    nearest, torch.cat with the lateral feature, convs) and two 1x1 heads (two outputs)."""

    def __init__(self, outputs=3 * (5 + 2)):
        super().__init__()
        act = lambda: nn.LeakyReLU(0.1)  # noqa: E731
        self.b1 = conv_bn_act(3, 16, 3, 2, act=act)  # 32x32
        self.b2 = conv_bn_act(16, 32, 3, 2, act=act)  # 16x16
        self.b3 = conv_bn_act(32, 48, 3, 2, act=act)  # 8x8 (lateral)
        self.b4 = conv_bn_act(48, 64, 3, 2, act=act)  # 4x4
        self.top = conv_bn_act(64, 64, 3, 1, act=act)
        self.reduce = conv_bn_act(64, 32, 1, act=act)
        self.up = nn.Upsample(scale_factor=2, mode="nearest")
        self.merge = nn.Sequential(conv_bn_act(80, 48, 1, act=act), conv_bn_act(48, 48, 3, act=act))
        self.head_large = nn.Conv2d(64, outputs, 1)  # 4x4
        self.head_small = nn.Conv2d(48, outputs, 1)  # 8x8

    def forward(self, x):
        lateral = self.b3(self.b2(self.b1(x)))
        top = self.top(self.b4(lateral))
        y = torch.cat([self.up(self.reduce(top)), lateral], 1)
        y = self.merge(y)
        return self.head_large(top), self.head_small(y)


class TanhSigmoidMlp(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, 2, 1)
        self.tanh = nn.Tanh()
        self.conv2 = nn.Conv2d(8, 16, 3, 2, 1)
        self.clip = nn.Hardtanh(-1.0, 1.0)
        self.conv3 = nn.Conv2d(16, 16, 3, 2, 1)
        self.sigmoid = nn.Sigmoid()
        self.fc1 = nn.Linear(16 * 8 * 8, 32)
        self.fc2 = nn.Linear(32, NUM_CLASSES)

    def forward(self, x):
        x = self.tanh(self.conv1(x))
        x = self.clip(self.conv2(x))
        x = self.sigmoid(self.conv3(x))
        x = torch.tanh(self.fc1(torch.flatten(x, 1)))
        return torch.sigmoid(self.fc2(x))


# A small YOLOv5-like detector: Conv-BN-SiLU, C3 blocks, SPPF, PANet neck, three heads whose
# outputs are viewed as (1, anchors, H, W, 5 + classes) and passed through a sigmoid.


def yconv(cin, cout, k=1, s=1):
    return conv_bn_act(cin, cout, k, s, act=nn.SiLU)


class Bottleneck(nn.Module):
    def __init__(self, c, shortcut):
        super().__init__()
        self.cv1 = yconv(c, c, 1)
        self.cv2 = yconv(c, c, 3)
        self.add = shortcut

    def forward(self, x):
        y = self.cv2(self.cv1(x))
        return x + y if self.add else y


class C3(nn.Module):
    def __init__(self, cin, cout, n=1, shortcut=True):
        super().__init__()
        c = cout // 2
        self.cv1 = yconv(cin, c)
        self.cv2 = yconv(cin, c)
        self.m = nn.Sequential(*(Bottleneck(c, shortcut) for _ in range(n)))
        self.cv3 = yconv(2 * c, cout)

    def forward(self, x):
        return self.cv3(torch.cat((self.m(self.cv1(x)), self.cv2(x)), 1))


class SPPF(nn.Module):
    def __init__(self, cin, cout, k=5):
        super().__init__()
        c = cin // 2
        self.cv1 = yconv(cin, c)
        self.cv2 = yconv(4 * c, cout)
        self.m = nn.MaxPool2d(k, 1, k // 2)

    def forward(self, x):
        x = self.cv1(x)
        y1 = self.m(x)
        y2 = self.m(y1)
        return self.cv2(torch.cat((x, y1, y2, self.m(y2)), 1))


class YoloLike(nn.Module):
    # widths: the stem's two convolutions, then P3, P4, P5 (the committed model: 16 to 64; --full's
    # yolo_v5s_like: YOLOv5s's 32 to 512 with its 80 classes).
    def __init__(self, classes=2, anchors=3, widths=(16, 24, 32, 48, 64)):
        super().__init__()
        self.na, self.no = anchors, 5 + classes
        w0, w1, w2, w3, w4 = widths
        self.backbone = nn.ModuleList([
            nn.Sequential(yconv(3, w0, 3, 2), yconv(w0, w1, 3, 2), C3(w1, w1)),  # 16x16
            nn.Sequential(yconv(w1, w2, 3, 2), C3(w2, w2)),  # P3 8x8
            nn.Sequential(yconv(w2, w3, 3, 2), C3(w3, w3)),  # P4 4x4
            nn.Sequential(yconv(w3, w4, 3, 2), C3(w4, w4), SPPF(w4, w4)),  # P5 2x2
        ])
        self.up = nn.Upsample(scale_factor=2, mode="nearest")
        self.lat5 = yconv(w4, w3)
        self.td4 = C3(2 * w3, w3, shortcut=False)
        self.lat4 = yconv(w3, w2)
        self.td3 = C3(2 * w2, w2, shortcut=False)  # out P3
        self.down3 = yconv(w2, w2, 3, 2)
        self.bu4 = C3(2 * w2, w3, shortcut=False)  # out P4
        self.down4 = yconv(w3, w3, 3, 2)
        self.bu5 = C3(2 * w3, w4, shortcut=False)  # out P5
        self.heads = nn.ModuleList(nn.Conv2d(c, self.na * self.no, 1) for c in (w2, w3, w4))

    def forward(self, x):
        x = self.backbone[0](x)
        p3 = self.backbone[1](x)
        p4 = self.backbone[2](p3)
        p5 = self.backbone[3](p4)
        h5 = self.lat5(p5)
        n4 = self.td4(torch.cat((self.up(h5), p4), 1))
        h4 = self.lat4(n4)
        o3 = self.td3(torch.cat((self.up(h4), p3), 1))
        o4 = self.bu4(torch.cat((self.down3(o3), h4), 1))
        o5 = self.bu5(torch.cat((self.down4(o4), h5), 1))
        outs = []
        for head, f in zip(self.heads, (o3, o4, o5)):
            y = head(f)
            bs, _, ny, nx = y.shape
            y = y.view(bs, self.na, self.no, ny, nx).permute(0, 1, 3, 4, 2).contiguous()
            outs.append(y.sigmoid())
        return tuple(outs)


# Transformers: a ViT in miniature (patch embedding, class token, position embedding, pre-norm
# encoder layers with nn.MultiheadAttention) and a BERT-like encoder of two
# nn.TransformerEncoderLayer (post-norm) on an already embedded sequence.


class VitBlock(nn.Module):
    """Pre-norm encoder layer: x + MHA(LN(x)), then x + MLP(LN(x)) (Linear-GELU-Linear)."""

    def __init__(self, dim, heads, hidden):
        super().__init__()
        self.norm1 = nn.LayerNorm(dim)
        self.attn = nn.MultiheadAttention(dim, heads, batch_first=True)
        self.norm2 = nn.LayerNorm(dim)
        self.mlp = nn.Sequential(nn.Linear(dim, hidden), nn.GELU(), nn.Linear(hidden, dim))

    def forward(self, x):
        y = self.norm1(x)
        x = x + self.attn(y, y, y, need_weights=False)[0]
        return x + self.mlp(self.norm2(x))


class TinyVit(nn.Module):
    """1x3x64x64 -> 8x8 patches (Conv2d 8x8 stride 8) -> 64 tokens of 64 -> class token
    (nn.Parameter, torch.cat in front) -> + learned position embedding (65 x 64) -> 2 pre-norm
    VitBlocks (4 heads, MLP 128) -> LayerNorm -> Linear on the class token -> 10 classes."""

    def __init__(self, dim=64, patch=8, depth=2, heads=4, hidden=128):
        super().__init__()
        tokens = (INPUT_SHAPE[2] // patch) * (INPUT_SHAPE[3] // patch)
        self.patch_embed = nn.Conv2d(INPUT_SHAPE[1], dim, patch, stride=patch)
        self.cls_token = nn.Parameter(torch.randn(1, 1, dim) * 0.02)
        self.pos_embed = nn.Parameter(torch.randn(1, tokens + 1, dim) * 0.02)
        self.blocks = nn.ModuleList(VitBlock(dim, heads, hidden) for _ in range(depth))
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, NUM_CLASSES)

    def forward(self, x):
        x = self.patch_embed(x).flatten(2).transpose(1, 2)  # [B, 64, dim]
        x = torch.cat((self.cls_token.expand(x.shape[0], -1, -1), x), dim=1)
        x = x + self.pos_embed
        for block in self.blocks:
            x = block(x)
        return self.head(self.norm(x)[:, 0])


class BertEncoder(nn.Module):
    """Two nn.TransformerEncoderLayer(d_model=64, nhead=4, dim_feedforward=128, gelu,
    batch_first=True, norm_first=False) on an embedded sequence [1, 32, 64] (its own input:
    standard normal float32, like LayerNorm'd embeddings); outputs the sequence [1, 32, 64]."""

    input_shape = (1, 32, 64)
    input_distribution = "normal"

    def __init__(self, d_model=64, nhead=4, hidden=128, depth=2):
        super().__init__()
        # Separate layers (nn.TransformerEncoder would deep-copy one layer: equal initial weights).
        self.layers = nn.ModuleList(
            nn.TransformerEncoderLayer(d_model, nhead, hidden, activation="gelu", batch_first=True,
                                       norm_first=False) for _ in range(depth))

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return x


# --------------------------------------------------------------------------------------------
# Reduced torchvision networks (and their full-size versions for --full)


def tv_mobilenet_v3_small():
    setting, last_channel = mobilenetv3._mobilenet_v3_conf("mobilenet_v3_small", width_mult=0.5,
                                                           reduced_tail=True)
    return mobilenetv3.MobileNetV3(setting, last_channel, num_classes=NUM_CLASSES)


def tv_efficientnet_b0():
    setting, last_channel = efficientnet._efficientnet_conf("efficientnet_b0", width_mult=0.25, depth_mult=1.0)
    return efficientnet.EfficientNet(setting, 0.2, last_channel=last_channel, num_classes=NUM_CLASSES)


def tv_regnet_y_400mf():
    params = regnet.BlockParams.from_init_params(depth=13, w_0=16, w_a=8.0, w_m=2.09, group_width=8,
                                                 se_ratio=0.25)
    return regnet.RegNet(params, num_classes=NUM_CLASSES, stem_width=16)


def tv_mnasnet():
    return mnasnet.MNASNet(0.25, num_classes=NUM_CLASSES)


def tv_densenet121():
    return densenet.DenseNet(growth_rate=8, block_config=(6, 12, 24, 16), num_init_features=16, bn_size=2,
                             num_classes=NUM_CLASSES)


MODELS = [
    # name, builder, outputs, what it exercises / how it is reduced
    ("avgpool_default", AvgPoolDefault, 1,
     "Conv3x3+ReLU, AvgPool2d(2), AvgPool2d(3,1,1) count_include_pad=True, "
     "AvgPool2d(3,2,1) count_include_pad=False, Conv3x3"),
    ("efficientnet_block", EfficientNetBlock, 1,
     "stem Conv+BN+SiLU, MBConv (expand, dw3x3, SE: AdaptiveAvgPool->1x1->SiLU->1x1->Sigmoid->Mul, "
     "project+BN, residual Add), MBConv dw5x5 s2, head Conv+SiLU, AdaptiveAvgPool, flatten, Linear"),
    ("mobilenetv3_block", MobileNetV3Block, 1,
     "stem Hardswish, inverted residuals with ReLU6 / Hardswish and torchvision SqueezeExcitation "
     "(Hardsigmoid gate), residual Add, x.mean((2,3), keepdim=True), Linear+Hardswish+Linear"),
    ("shufflenet_block", ShuffleNetBlock, 1,
     "torchvision shufflenetv2.InvertedResidual units (stride 2 and stride 1 with x.chunk(2, 1)), "
     "torch.cat, channel_shuffle (view/transpose/view), MaxPool, x.mean([2,3]), Linear"),
    ("densenet_block", DenseNetBlock, 1,
     "pre-activation dense layers (BN-ReLU-Conv1x1-BN-ReLU-Conv3x3) on torch.cat of all previous "
     "features, F.pad(x,(1,1,1,1)) before 3x3 convs with padding=0 in the first block, transition "
     "BN-ReLU-Conv1x1-AvgPool2d(2), final BN-ReLU, global pooling, Linear"),
    ("yolo_neck", YoloNeck, 2,
     "stride-2 Conv+BN+LeakyReLU(0.1) backbone, 1x1 conv, nn.Upsample(x2, nearest), torch.cat with a "
     "lateral feature, two 1x1 heads (two graph outputs)"),
    ("tanh_sigmoid_mlp", TanhSigmoidMlp, 1,
     "Conv+Tanh, Conv+Hardtanh(-1,1), Conv+Sigmoid, flatten, Linear+Tanh, Linear+Sigmoid"),
    ("mobilenet_v3_small", tv_mobilenet_v3_small, 1,
     "torchvision MobileNetV3 small via _mobilenet_v3_conf('mobilenet_v3_small', width_mult=0.5, "
     "reduced_tail=True): every channel count x0.5 (rounded to multiples of 8), the last stage's "
     "96/576 channels halved again by reduced_tail (-> 24/144), last_channel 1024 -> 256; "
     "num_classes=10"),
    ("efficientnet_b0", tv_efficientnet_b0, 1,
     "torchvision EfficientNet-B0; width_mult=0.25 (depth_mult=1.0: all 16 MBConv blocks), "
     "num_classes=10"),
    ("regnet_y_400mf", tv_regnet_y_400mf, 1,
     "torchvision RegNetY (SE 0.25, group width 8) reduced: BlockParams.from_init_params(depth=13, "
     "w_0=16, w_a=8.0, w_m=2.09, group_width=8, se_ratio=0.25), stem_width=16 -> stage depths "
     "[1,4,6,2], widths [16,32,72,144] (400MF: depth 16, w_0 48, w_a 27.89, stem 32 -> [1,3,6,6], "
     "[48,104,208,440]), num_classes=10"),
    ("mnasnet", tv_mnasnet, 1,
     "torchvision MNASNet(alpha=0.25, num_classes=10) (mnasnet1_0 is alpha=1.0)"),
    ("densenet121", tv_densenet121, 1,
     "torchvision DenseNet with DenseNet-121's block_config (6,12,24,16) (all 120 conv layers) and "
     "growth_rate=8, num_init_features=16, bn_size=2 (121: 32, 64, 4), num_classes=10"),
    ("yolo_like", YoloLike, 3,
     "YOLOv5-like detector: Conv+BN+SiLU, C3 blocks (bottlenecks with residual Add), SPPF "
     "(MaxPool 5x5 s1 p2 three times + Concat), PANet neck (Upsample x2 nearest + Concat, stride-2 "
     "convs + Concat), three 1x1 heads viewed as (1,3,H,W,7) by view/permute and Sigmoid"),
    ("tiny_vit", TinyVit, 1,
     "ViT in miniature: Conv2d 8x8 stride 8 patch embedding (64 tokens of 64), class token "
     "(nn.Parameter, torch.cat), learned position embedding, 2 pre-norm encoder layers (nn.LayerNorm, "
     "nn.MultiheadAttention 4 heads batch_first, Linear-GELU-Linear MLP 128), final LayerNorm, Linear "
     "on the class token -> 10"),
    ("bert_encoder", BertEncoder, 1,
     "BERT-like encoder on an embedded sequence: input [1,32,64] standard normal, 2 "
     "nn.TransformerEncoderLayer(d_model=64, nhead=4, dim_feedforward=128, activation='gelu', "
     "batch_first=True, norm_first=False), output the sequence [1,32,64]"),
]

FULL_MODELS = [
    ("mobilenet_v3_small", lambda: torchvision.models.mobilenet_v3_small()),
    ("efficientnet_b0", lambda: torchvision.models.efficientnet_b0()),
    ("regnet_y_400mf", lambda: torchvision.models.regnet_y_400mf()),
    ("mnasnet1_0", lambda: torchvision.models.mnasnet1_0()),
    ("mnasnet0_5", lambda: torchvision.models.mnasnet0_5()),
    ("densenet121", lambda: torchvision.models.densenet121()),
    ("shufflenet_v2_x1_0", lambda: torchvision.models.shufflenet_v2_x1_0()),
    # Not torchvision: yolo_like at YOLOv5s's widths (32, 64, 128, 256, 512) and 80 classes, one
    # bottleneck per C3 (YOLOv5s has 1, 2, 3, 1); three outputs.
    ("yolo_v5s_like", lambda: YoloLike(classes=80, widths=(32, 64, 128, 256, 512)), 3),
]


# --------------------------------------------------------------------------------------------
# Building, exporting, describing


def seed_of(name):
    return zlib.crc32(name.encode()) & 0x7FFFFFFF


def randomize_batchnorm(model, gen):
    """BatchNorm2d: random statistics and affine parameters; LayerNorm: the same affine
    parameters (weight ~ U(0.5, 1.5), bias ~ N(0, 0.1)) instead of PyTorch's ones and zeros."""
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, nn.BatchNorm2d):
                c = m.num_features
                m.running_mean.copy_(torch.randn(c, generator=gen) * 0.1)
                m.running_var.copy_(torch.rand(c, generator=gen) + 0.5)
                if m.affine:
                    m.weight.copy_(torch.rand(c, generator=gen) + 0.5)
                    m.bias.copy_(torch.randn(c, generator=gen) * 0.1)
            elif isinstance(m, nn.LayerNorm) and m.elementwise_affine:
                m.weight.copy_(torch.rand(m.weight.shape, generator=gen) + 0.5)
                m.bias.copy_(torch.randn(m.bias.shape, generator=gen) * 0.1)


def normalize_activations(model, x):
    """Rescales each Conv2d/Linear (weight and bias) so its output on x has standard deviation 1,
    in execution order in one pass (the hook also rescales the output that flows on).

    nn.MultiheadAttention calls no Linear module (F.multi_head_attention_forward reads
    in_proj_weight and out_proj.weight directly), so it gets hooks of its own: before it runs,
    the query, key and value projections (in_proj_weight/in_proj_bias rows) are each rescaled to
    output std 1 on the module's inputs (attention scores q.k/sqrt(d) then have std ~1 too), and
    after it, out_proj so the attention output has std 1. Models with attention are calibrated
    with autograd enabled: in eval mode under no_grad, nn.TransformerEncoderLayer takes its fused
    fast path (torch._transformer_encoder_layer_fwd), which calls none of its submodules."""
    done = set()

    def ok(s):
        return s > 0 and math.isfinite(s)

    def hook(module, _inputs, output):
        if module in done:
            return None
        done.add(module)
        s = output.std().item()
        if not ok(s):
            return None
        with torch.no_grad():
            module.weight.mul_(1.0 / s)
            if module.bias is not None:
                module.bias.mul_(1.0 / s)
        return output * (1.0 / s)

    def mha_pre_hook(module, inputs):
        if module in done:
            return
        assert module._qkv_same_embed_dim and len(inputs) >= 3, "MultiheadAttention: q, k, v by position"
        e = module.embed_dim
        with torch.no_grad():
            for j, t in enumerate(inputs[:3]):
                w = module.in_proj_weight[j * e:(j + 1) * e]
                b = module.in_proj_bias[j * e:(j + 1) * e] if module.in_proj_bias is not None else None
                s = F.linear(t, w, b).std().item()
                if ok(s):
                    w.mul_(1.0 / s)
                    if b is not None:
                        b.mul_(1.0 / s)

    def mha_hook(module, _inputs, output):
        if module in done:
            return None
        done.add(module)
        y, weights = output
        s = y.std().item()
        if not ok(s):
            return None
        with torch.no_grad():
            module.out_proj.weight.mul_(1.0 / s)
            if module.out_proj.bias is not None:
                module.out_proj.bias.mul_(1.0 / s)
        return y * (1.0 / s), weights

    handles = [m.register_forward_hook(hook) for m in model.modules() if isinstance(m, (nn.Conv2d, nn.Linear))]
    attention = [m for m in model.modules() if isinstance(m, nn.MultiheadAttention)]
    for m in attention:
        handles.append(m.register_forward_pre_hook(mha_pre_hook))
        handles.append(m.register_forward_hook(mha_hook))
    with torch.set_grad_enabled(bool(attention)):
        model(x)
    for h in handles:
        h.remove()


def input_spec(builder):
    """A model's input shape and distribution: INPUT_SHAPE uniform [0, 1) unless its class sets
    input_shape / input_distribution ("normal": standard normal)."""
    return tuple(getattr(builder, "input_shape", INPUT_SHAPE)), getattr(builder, "input_distribution", "uniform")


def draw_input(rng, builder):
    shape, distribution = input_spec(builder)
    if distribution == "normal":
        return rng.standard_normal(shape, dtype=np.float32)
    assert distribution == "uniform", distribution
    return rng.random(shape, dtype=np.float32)


def build(name, builder):
    """The model (eval mode, random BN statistics, normalized weights) and its input."""
    seed = seed_of(name)
    torch.manual_seed(seed)
    model = builder()
    model.eval()
    gen = torch.Generator().manual_seed(seed)
    randomize_batchnorm(model, gen)
    rng = np.random.default_rng(seed)
    calib = torch.from_numpy(draw_input(rng, builder))
    normalize_activations(model, calib)
    x = draw_input(rng, builder)
    return model, x


def run(model, x):
    with torch.no_grad():
        y = model(torch.from_numpy(x))
    ys = list(y) if isinstance(y, (tuple, list)) else [y]
    return [t.detach().numpy().astype(np.float32) for t in ys]


def output_names(n):
    return ["output"] if n == 1 else [f"output_{i}" for i in range(n)]


def export_onnx(model, x, n_outputs):
    """The ONNX file's bytes, exported as a user would (PyTorch's defaults)."""
    f = io.BytesIO()
    torch.onnx.export(model, torch.from_numpy(x), f, opset_version=OPSET, input_names=["input"],
                      output_names=output_names(n_outputs))
    return f.getvalue()


def output_files(name, n):
    return [f"{name}_output.npy"] if n == 1 else [f"{name}_output_{i}.npy" for i in range(n)]


def debian_version(package, module):
    """The Debian version of the unpacked (or installed) package providing module."""
    path = os.path.abspath(module.__file__)
    m = re.match(r"(.*)/root/usr/lib/python3/dist-packages/", path)
    if m:
        debs = os.path.join(m.group(1), "debs")
        if os.path.isdir(debs):
            for f in sorted(os.listdir(debs)):
                if f.startswith(package + "_") and f.endswith(".deb"):
                    return f.split("_")[1].replace("%3a", ":")
    try:
        import subprocess
        return subprocess.run(["dpkg-query", "-W", "-f=${Version}", package], capture_output=True,
                              text=True, check=True).stdout.strip() or None
    except Exception:  # noqa: BLE001
        return None


def versions():
    import onnx
    return {
        "torch": torch.__version__,
        "torch_debian": debian_version("python3-torch", torch),
        "torchvision": torchvision.__version__,
        "torchvision_debian": debian_version("python3-torchvision", torchvision),
        "onnx_python": onnx.__version__,
        "numpy": np.__version__,
        "opset": OPSET,
    }


def tensor_shape(value_info):
    return [d.dim_value if d.HasField("dim_value") else d.dim_param
            for d in value_info.type.tensor_type.shape.dim]


def attr_value(a):
    import onnx
    v = onnx.helper.get_attribute_value(a)
    if isinstance(v, bytes):
        return v.decode()
    if isinstance(v, onnx.TensorProto):
        return onnx.numpy_helper.to_array(v).tolist()
    if isinstance(v, (list, tuple)):
        return [x.decode() if isinstance(x, bytes) else x for x in v]
    if isinstance(v, float):
        return float(np.float32(v))
    return v


def describe_onnx(path):
    """Inputs, outputs, op census and the distinct attribute/constant-input signatures of the
    ops whose semantics matter to an importer."""
    import onnx
    from onnx import numpy_helper
    model = onnx.load(path)
    g = model.graph
    inits = {t.name: numpy_helper.to_array(t) for t in g.initializer}
    consts = {}
    for n in g.node:
        if n.op_type == "Constant":
            for a in n.attribute:
                if a.name == "value":
                    consts[n.output[0]] = numpy_helper.to_array(a.t)
    init_names = set(inits)
    counts = collections.Counter(n.op_type for n in g.node)
    detail = collections.defaultdict(collections.Counter)
    skip_detail = {"Constant", "Relu", "Sigmoid", "Tanh", "Mul", "Add", "Flatten"}
    for n in g.node:
        if n.op_type in skip_detail:
            continue
        sig = {a.name: attr_value(a) for a in sorted(n.attribute, key=lambda a: a.name)}
        if n.op_type == "Conv":
            # Kernel geometry and kind; the group count itself only for grouped (not depthwise).
            w = inits.get(n.input[1])
            groups = sig.pop("group", 1)
            if w is None:
                sig["kind"] = "weights not an initializer"
            elif groups > 1 and groups == w.shape[0] and w.shape[1] == 1:
                sig["kind"] = "depthwise"
            elif groups > 1:
                sig["kind"], sig["group"] = "grouped", groups
            else:
                sig["kind"] = "dense"
            if sig.get("dilations") == [1, 1]:
                del sig["dilations"]
            sig["bias"] = len(n.input) > 2
        elif n.op_type in ("BatchNormalization", "Gemm"):
            if n.op_type == "Gemm":
                sig["weight_shape"] = list(inits[n.input[1]].shape) if n.input[1] in inits else None
        else:
            consts_in = []
            for i, name in enumerate(n.input):
                if name in inits or name in consts:
                    v = inits.get(name, consts.get(name))
                    consts_in.append([i, v.tolist() if v.size <= 16 else f"<{list(v.shape)}>"])
                elif name == "":
                    consts_in.append([i, None])
            if consts_in:
                sig["constant_inputs"] = consts_in
        detail[n.op_type][json.dumps(sig, sort_keys=True)] += 1
    # A node input that is neither an initializer, a Constant's output, another node's output
    # nor a graph input would be a bug; also count tensors read by several nodes.
    readers = collections.Counter(i for n in g.node for i in n.input if i)
    return {
        "ir_version": model.ir_version,
        "opset": [{"domain": o.domain, "version": o.version} for o in model.opset_import],
        "producer": f"{model.producer_name} {model.producer_version}",
        "inputs": [{"name": i.name, "shape": tensor_shape(i)} for i in g.input if i.name not in init_names],
        "outputs": [{"name": o.name, "shape": tensor_shape(o)} for o in g.output],
        "nodes": len(g.node),
        "ops": dict(sorted(counts.items())),
        "op_details": {op: [dict(json.loads(k), count=c) for k, c in sorted(v.items())]
                       for op, v in sorted(detail.items())},
        "initializers": len(g.initializer),
        "tensors_with_several_readers": sum(1 for k, c in readers.items() if c > 1 and k not in init_names),
    }


def export_one(name, builder, n_outputs, outdir, description=None):
    model, x = build(name, builder)
    ys = run(model, x)
    assert len(ys) == n_outputs, (name, len(ys))
    for y in ys:
        assert np.all(np.isfinite(y)), name
    data = export_onnx(model, x, n_outputs)
    onnx_file = os.path.join(outdir, f"{name}.onnx")
    with open(onnx_file, "wb") as f:
        f.write(data)
    np.save(os.path.join(outdir, f"{name}_input.npy"), x)
    for y, fn in zip(ys, output_files(name, n_outputs)):
        np.save(os.path.join(outdir, fn), y)
    info = describe_onnx(onnx_file)
    entry = {
        "name": name,
        "file": f"{name}.onnx",
        "description": description,
        "seed": seed_of(name),
        "input_file": f"{name}_input.npy",
        "output_files": output_files(name, n_outputs),
        "parameters": sum(p.numel() for p in model.parameters()),
        "file_size": len(data),
        "sha256": hashlib.sha256(data).hexdigest(),
        "output_stats": [{"min": float(y.min()), "max": float(y.max()), "mean": float(y.mean()),
                          "std": float(y.std())} for y in ys],
    }
    entry.update(info)
    print(f"{name}: {len(data)} bytes, {entry['parameters']} parameters, {info['nodes']} nodes: "
          + ", ".join(f"{k} {v}" for k, v in info["ops"].items()), flush=True)
    return entry


def census(entries):
    models_per_op = collections.defaultdict(list)
    nodes_per_op = collections.Counter()
    for e in entries:
        for op, c in e["ops"].items():
            models_per_op[op].append(e["name"])
            nodes_per_op[op] += c
    return {op: {"models": len(ms), "nodes": nodes_per_op[op], "used_by": ms}
            for op, ms in sorted(models_per_op.items())}


def input_overrides(entries):
    names = {e["name"] for e in entries}
    out = {}
    for name, builder, *_ in MODELS:
        shape, distribution = input_spec(builder)
        if name in names and (shape, distribution) != (INPUT_SHAPE, "uniform"):
            out[name] = {"input_shape": list(shape),
                         "input_distribution": {"normal": "standard normal float32",
                                                "uniform": "uniform [0, 1) float32"}[distribution]}
    return out


def write_manifest(entries, path, extra=None):
    manifest = {
        "generator": "models/networks/exporter_zoo/export.py",
        "versions": versions(),
        "export": {"opset_version": OPSET, "do_constant_folding": True, "training": "EVAL",
                   "input_shape": list(INPUT_SHAPE), "input_distribution": "uniform [0, 1) float32",
                   # models whose input is not the default one (input_spec)
                   "input_overrides": input_overrides(entries)},
        "models": entries,
        "op_census": census(entries),
    }
    if extra:
        manifest.update(extra)
    with open(path, "w") as f:
        json.dump(manifest, f, indent=1, sort_keys=False)
        f.write("\n")


class NumpyOnnx:
    """A small float64 NumPy interpreter of the ONNX ops this zoo contains: an independent check
    that each exported graph computes what PyTorch computed (PyTorch's exporter has had bugs)."""

    def __init__(self, path):
        import onnx
        from onnx import numpy_helper
        self.model = onnx.load(path)
        self.np = numpy_helper
        self.inits = {t.name: numpy_helper.to_array(t) for t in self.model.graph.initializer}

    @staticmethod
    def _windows(x, kernel, strides, pads, value):
        """x NCHW padded by pads [t, l, b, r] with value; windows (N, C, Ho, Wo, kh, kw)."""
        t, l, b, r = pads
        x = np.pad(x, ((0, 0), (0, 0), (t, b), (l, r)), constant_values=value)
        w = np.lib.stride_tricks.sliding_window_view(x, kernel, axis=(2, 3))
        return w[:, :, ::strides[0], ::strides[1]]

    def _conv(self, n, a, x, w, b=None):
        k = a.get("kernel_shape", list(w.shape[2:]))
        assert a.get("dilations", [1, 1]) == [1, 1] and a.get("auto_pad", "NOTSET") == "NOTSET"
        pads, strides, g = a.get("pads", [0, 0, 0, 0]), a.get("strides", [1, 1]), a.get("group", 1)
        win = self._windows(x, k, strides, pads, 0.0)
        N, C, Ho, Wo = win.shape[:4]
        win = win.reshape(N, g, C // g, Ho, Wo, k[0], k[1])
        wg = w.reshape(g, w.shape[0] // g, w.shape[1], k[0], k[1])
        y = np.einsum("ngchwij,gkcij->ngkhw", win, wg, optimize=True).reshape(N, w.shape[0], Ho, Wo)
        return y + b.reshape(1, -1, 1, 1) if b is not None else y

    def _pool(self, n, a, x, kind):
        k, pads = a["kernel_shape"], a.get("pads", [0, 0, 0, 0])
        assert a.get("ceil_mode", 0) == 0 and a.get("auto_pad", "NOTSET") == "NOTSET"
        strides = a.get("strides", [1, 1])
        if kind == "max":
            return self._windows(x, k, strides, pads, -np.inf).max(axis=(4, 5))
        s = self._windows(x, k, strides, pads, 0.0).sum(axis=(4, 5))
        if a.get("count_include_pad", 0):
            return s / (k[0] * k[1])
        ones = np.ones((1, 1) + x.shape[2:])
        return s / self._windows(ones, k, strides, pads, 0.0).sum(axis=(4, 5))

    @staticmethod
    def _erf(x):
        """erf to float64 precision (math.erf per element: no SciPy needed)."""
        return np.vectorize(math.erf, otypes=[np.float64])(x)

    def run(self, feeds):
        import onnx
        env = dict(self.inits)
        env.update(feeds)
        env[""] = None
        for n in self.model.graph.node:
            a = {x.name: onnx.helper.get_attribute_value(x) for x in n.attribute}
            a = {k: (v.decode() if isinstance(v, bytes) else v) for k, v in a.items()}
            i = [env[name] for name in n.input]
            op = n.op_type
            if op == "Constant":
                y = self.np.to_array(a["value"])
            elif op == "Conv":
                y = self._conv(n, a, *i)
            elif op == "MaxPool":
                y = self._pool(n, a, i[0], "max")
            elif op == "AveragePool":
                y = self._pool(n, a, i[0], "avg")
            elif op == "GlobalAveragePool":
                y = i[0].mean(axis=(2, 3), keepdims=True)
            elif op == "ReduceMean":
                y = i[0].mean(axis=tuple(a["axes"]), keepdims=bool(a.get("keepdims", 1)))
            elif op == "BatchNormalization":
                x, sc, bi, mean, var = i
                r = lambda v: v.reshape(1, -1, 1, 1)  # noqa: E731
                y = (x - r(mean)) / np.sqrt(r(var) + a.get("epsilon", 1e-5)) * r(sc) + r(bi)
            elif op == "Pad":
                assert a.get("mode", "constant") == "constant"
                p = i[1].astype(int)
                value = i[2] if len(i) > 2 and i[2] is not None else 0.0
                h = len(p) // 2
                y = np.pad(i[0], [(p[d], p[d + h]) for d in range(h)], constant_values=value)
            elif op == "Gemm":
                A = i[0].T if a.get("transA", 0) else i[0]
                B = i[1].T if a.get("transB", 0) else i[1]
                y = a.get("alpha", 1.0) * A @ B
                if len(i) > 2 and i[2] is not None:
                    y = y + a.get("beta", 1.0) * i[2]
            elif op == "Flatten":
                ax = a.get("axis", 1)
                y = i[0].reshape(int(np.prod(i[0].shape[:ax])), -1)
            elif op == "Relu":
                y = np.maximum(i[0], 0)
            elif op == "LeakyRelu":
                y = np.where(i[0] >= 0, i[0], i[0] * a.get("alpha", 0.01))
            elif op == "Sigmoid":
                y = 1.0 / (1.0 + np.exp(-i[0]))
            elif op == "Tanh":
                y = np.tanh(i[0])
            elif op == "HardSigmoid":
                y = np.clip(i[0] * a.get("alpha", 0.2) + a.get("beta", 0.5), 0, 1)
            elif op == "Clip":
                lo = i[1] if len(i) > 1 and i[1] is not None else -np.inf
                hi = i[2] if len(i) > 2 and i[2] is not None else np.inf
                y = np.clip(i[0], lo, hi)
            elif op in ("Add", "Mul", "Div", "Sub"):
                x0, x1 = i
                if op == "Div" and np.issubdtype(x0.dtype, np.integer):
                    y = np.trunc(x0 / x1).astype(x0.dtype)
                else:
                    y = {"Add": np.add, "Mul": np.multiply, "Div": np.divide, "Sub": np.subtract}[op](x0, x1)
            elif op in ("Identity", "Dropout"):
                y = i[0]
            elif op == "Concat":
                y = np.concatenate(i, axis=a["axis"])
            elif op == "Reshape":
                shape = [d if d != 0 else i[0].shape[k] for k, d in enumerate(i[1].tolist())]
                y = i[0].reshape(shape)
            elif op == "Transpose":
                y = np.transpose(i[0], a.get("perm"))
            elif op == "Shape":
                y = np.array(i[0].shape, dtype=np.int64)
            elif op == "Gather":
                y = np.take(i[0], i[1], axis=a.get("axis", 0))
            elif op == "Slice":
                x, starts, ends = i[0], i[1], i[2]
                axes = i[3] if len(i) > 3 and i[3] is not None else np.arange(len(starts))
                steps = i[4] if len(i) > 4 and i[4] is not None else np.ones(len(starts), np.int64)
                sl = [slice(None)] * x.ndim
                for s0, e0, ax, st in zip(starts.tolist(), ends.tolist(), axes.tolist(), steps.tolist()):
                    dim = x.shape[ax]
                    if st > 0:
                        lo = max(0, min(dim, s0 + dim if s0 < 0 else s0))
                        hi = max(0, min(dim, e0 + dim if e0 < 0 else e0))
                        sl[ax] = slice(lo, hi, st)
                    else:
                        lo = max(-1, min(dim - 1, s0 + dim if s0 < 0 else s0))
                        hi = max(-1, min(dim - 1, e0 + dim if e0 < 0 else e0))
                        sl[ax] = slice(lo, hi if hi >= 0 else None, st)
                y = x[tuple(sl)]
            elif op == "Cast":
                y = i[0].astype(onnx.mapping.TENSOR_TYPE_TO_NP_TYPE[a["to"]])
            elif op == "ConstantOfShape":
                v = self.np.to_array(a["value"]) if "value" in a else np.zeros(1, np.float32)
                y = np.full(i[0].astype(int).tolist(), v.reshape(-1)[0], dtype=v.dtype)
            elif op == "MatMul":
                y = np.matmul(i[0], i[1])
            elif op == "Pow":
                y = np.power(i[0], i[1])
            elif op == "Sqrt":
                y = np.sqrt(i[0])
            elif op == "Erf":
                y = self._erf(i[0])
            elif op == "Softmax":
                ax = a.get("axis", -1)  # opset 13: along one axis (opset < 13: flattened from axis on)
                e = np.exp(i[0] - i[0].max(axis=ax, keepdims=True))
                y = e / e.sum(axis=ax, keepdims=True)
            elif op == "Equal":
                y = np.equal(i[0], i[1])
            elif op == "Where":
                y = np.where(i[0], i[1], i[2])
            elif op == "Expand":
                shape = i[1].astype(int).tolist()
                y = i[0] * np.ones(shape, dtype=i[0].dtype)  # bidirectional broadcast
            elif op == "Resize":
                assert a.get("mode") == "nearest" and a.get("coordinate_transformation_mode") == "asymmetric"
                assert a.get("nearest_mode", "round_prefer_floor") == "floor"
                x, scales = i[0], i[2]
                y = x
                for ax, sc in enumerate(scales.tolist()):
                    if sc != 1.0:
                        out = int(np.floor(x.shape[ax] * sc))
                        idx = np.minimum(np.floor(np.arange(out) / sc).astype(int), x.shape[ax] - 1)
                        y = np.take(y, idx, axis=ax)
            else:
                raise NotImplementedError(op)
            if isinstance(y, np.ndarray) and y.dtype in (np.float32, np.float16):
                y = y.astype(np.float64)
            env[n.output[0]] = y
        return [env[o.name] for o in self.model.graph.output]


def check(outdir, selected):
    """Re-loads every model and verifies it: onnx.checker (full_check), the manifest's shapes
    and ops, the model rebuilt from its seed gives PyTorch's saved output bit for bit on the
    saved input, the ONNX graph run by a NumPy float64 interpreter (NumpyOnnx) agrees with it
    to 1e-4 of the output's largest magnitude, and a re-export is byte-identical to the
    committed .onnx."""
    import onnx
    with open(os.path.join(outdir, "manifest.json")) as f:
        manifest = json.load(f)
    by_name = {e["name"]: e for e in manifest["models"]}
    failures = 0
    for name, builder, n_outputs, _ in MODELS:
        if selected and name not in selected:
            continue
        problems = []
        numpy_errors = []
        e = by_name.get(name)
        if e is None:
            problems.append("not in manifest.json")
        path = os.path.join(outdir, f"{name}.onnx")
        model_proto = onnx.load(path)
        try:
            onnx.checker.check_model(model_proto, full_check=True)
        except Exception as ex:  # noqa: BLE001
            problems.append(f"onnx.checker: {ex}")
        info = describe_onnx(path)
        x = np.load(os.path.join(outdir, f"{name}_input.npy"))
        saved = [np.load(os.path.join(outdir, fn)) for fn in output_files(name, n_outputs)]
        if e is not None:
            for key in ("ops", "inputs", "outputs"):
                if e[key] != info[key]:
                    problems.append(f"manifest {key} differ")
        if list(x.shape) != info["inputs"][0]["shape"] or x.dtype != np.float32:
            problems.append("input file shape/dtype")
        for y, o in zip(saved, info["outputs"]):
            if list(y.shape) != o["shape"] or y.dtype != np.float32:
                problems.append(f"output {o['name']} shape {list(y.shape)} vs ONNX {o['shape']}")
        model, x_rebuilt = build(name, builder)
        if not np.array_equal(x, x_rebuilt):
            problems.append("input differs from the seeded one")
        ys = run(model, x)
        for i, (y, s) in enumerate(zip(ys, saved)):
            if not np.array_equal(y, s):
                problems.append(f"output {i}: max |torch - saved| {np.abs(y - s).max()}")
        try:
            ref = NumpyOnnx(path).run({"input": x.astype(np.float64)})
            for i, (r, s) in enumerate(zip(ref, saved)):
                err = float(np.abs(r - s).max()) / max(float(np.abs(r).max()), 1e-12)
                if not err < 1e-4:
                    problems.append(f"output {i}: ONNX graph (NumPy float64) vs torch: max error {err:.2e} of max |y|")
                numpy_errors.append(err)
        except NotImplementedError as ex:
            problems.append(f"NumPy interpreter lacks {ex}")
        data = export_onnx(model, x, n_outputs)
        with open(path, "rb") as f:
            if f.read() != data:
                problems.append("re-export is not byte-identical")
        status = "ok" if not problems else "FAIL: " + "; ".join(problems)
        if numpy_errors:
            status += f" (NumPy ONNX interpreter vs torch: max error {max(numpy_errors):.1e} of max |y|)"
        failures += bool(problems)
        print(f"{name}: {status}", flush=True)
    return failures


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=HERE, help="output directory (default: this script's)")
    ap.add_argument("--only", nargs="*", help="models to export/check (default: all)")
    ap.add_argument("--check", action="store_true", help="verify the exported files instead")
    ap.add_argument("--full", metavar="OUTDIR",
                    help="export the full-size torchvision models (1000 classes) at 1x3x64x64 into "
                         "OUTDIR instead (a local check; too big to commit)")
    ap.add_argument("--threads", type=int, default=1, help="torch threads (default 1)")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    selected = set(args.only or [])
    known = {m[0] for m in MODELS} | {m[0] for m in FULL_MODELS}
    unknown = selected - known
    if unknown:
        ap.error(f"unknown models: {', '.join(sorted(unknown))}")

    if args.check:
        failures = check(args.out, selected)
        print(f"{failures} failure(s)")
        return 1 if failures else 0

    if args.full:
        os.makedirs(args.full, exist_ok=True)
        entries = []
        for name, builder, *n_outputs in FULL_MODELS:
            if selected and name not in selected:
                continue
            entries.append(export_one(name, builder, (n_outputs or [1])[0], args.full,
                                      f"torchvision.models.{name}() full size"
                                      if not n_outputs else f"{name} full size"))
        write_manifest(entries, os.path.join(args.full, "manifest.json"))
        return 0

    os.makedirs(args.out, exist_ok=True)
    manifest_path = os.path.join(args.out, "manifest.json")
    previous = {}
    if selected and os.path.exists(manifest_path):
        with open(manifest_path) as f:
            previous = {e["name"]: e for e in json.load(f)["models"]}
    entries = []
    for name, builder, n_outputs, description in MODELS:
        if selected and name not in selected:
            if name in previous:
                entries.append(previous[name])
            continue
        entries.append(export_one(name, builder, n_outputs, args.out, description))
    write_manifest(entries, manifest_path)
    total = sum(e["file_size"] for e in entries)
    print(f"total .onnx: {total} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
