#!/usr/bin/python3
"""depthwise_cbuf_repro.py C H K OUT.onnx -- one depthwise KxK convolution (stride 1, pads K//2,
group = C) on a 1xCxHxH input: the minimal reproduction of why the full-size EfficientNet-B0 and
MNASNet 1.0 are refused (README, "Full-size networks").

    eval "$(scripts/unpack-torch.sh | grep ^export)"     # python3-onnx
    models/networks/exporter_zoo/depthwise_cbuf_repro.py 640 4 5 /tmp/dw640.onnx
    build/sim/app/octasim net /tmp/dw640.onnx --config nv_full --precision fp16 --functional
    # octasim: error: /tmp/dw640.onnx: Conv 'dw': convolution: one output row reads 5 input lines
    # of 80 CBUF entries (1 banks) and one kernel group needs 16 banks more, but the CBUF has 16:
    # the 4x4x640 input cannot be split in height
    # (C = 608 runs bit-exact; INT8 fails at the same C.)
"""
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

C, H, K = (int(a) for a in sys.argv[1:4])
rng = np.random.default_rng(0)
w = (rng.standard_normal((C, 1, K, K)) / K).astype(np.float32)
b = np.zeros(C, np.float32)
node = helper.make_node("Conv", ["x", "w", "b"], ["y"], name="dw", group=C, kernel_shape=[K, K],
                        pads=[K // 2] * 4, strides=[1, 1])
graph = helper.make_graph(
    [node], "depthwise", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, C, H, H])],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, C, H, H])],
    [numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b")])
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
model.ir_version = 7
onnx.checker.check_model(model)
onnx.save(model, sys.argv[4])
