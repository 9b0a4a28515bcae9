// Batching the fully-connected layers (`octasim net --batch N`, QuantOptions::fc_batch): a program
// that runs N images, as NVIDIA's performance sheet assumes ("fully-connected batch 16": the FC
// weights are read once for several frames).
//
// A fully-connected layer is a CONV layer whose kernel covers its input cube (one output pixel,
// no padding): a Gemm/MatMul on a flattened tensor, or a convolution of that shape (LeNet-5's
// C5). The network's layers from the first one on are its fully-connected tail. The batched
// program (batch_program) holds
//   - the layers before the tail once per image, image after image: image b reads input slot b
//     (the input surface at NetTensor::batch_stride steps, one slot per image) and writes the
//     tail's input into slot b of a batch buffer; its other activations reuse the same buffers
//     image after image;
//   - each fully-connected layer of the tail in NVDLA's multi-batch mode (ConvLayer::batches),
//     its weights fetched once for the batch: one layer when the CBUF holds the N input cubes
//     beside one kernel group, otherwise the largest batches that fit, in order (the programming
//     guide's rule, ceil(batches * entries_per_slice * H / bank depth) data banks: fc_batches);
//     its SDP stage (bias, requantization, ReLU) on the fly for every batch;
//   - the tail's other layers (an OCTAV clip and the SDP it programs, a ReLU alone on SDP, a
//     pooling, ...) once per image, on that image's slot.
// Every tensor the tail writes has a buffer of N slots; the multi-batch layers' outputs have
// 64-byte aligned line and surface strides and slots (the programming guide). The network's
// outputs are tail tensors: NetTensor::batch_stride gives image b's (runtime.hpp read_output
// slot b).
// Refused, with one line naming the reason (models::graph::GraphError): a configuration without
// multi-batch convolution (BATCH: nv_small, ...), FP16 (multi-batch is INT8/INT16 here), a
// network without a fully-connected layer, a tail layer reading a tensor computed before the
// tail other than the tail's input, a network output computed before the tail, the PPU's
// softmax (its push buffer names fixed addresses), a tail tensor written in parts (Split H
// bands, a Concat).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "firmware/net/program.hpp"
#include "models/graph/graph.hpp"
#include "models/ops/memory.hpp"

namespace octasim::firmware::net {

// Whether `l` is fully connected: its kernel covers the whole input cube without padding.
[[nodiscard]] bool fully_connected(const ConvLayer& l);

// The largest number of `l`'s input cubes (1..32, NVDLA's BATCH_NUMBER) the CBUF holds beside
// one kernel group: ceil(n * entries_per_slice * H / bank depth) data banks plus the minimum
// weight banks within the CBUF's (conv_cbuf_budget). Throws FirmwareError like plan_conv.
[[nodiscard]] std::uint32_t max_fc_batch(const ConvLayer& l, const ConvHardware& hw);

// `images` split into the batches `l` runs: the largest that fit (max_fc_batch), then the rest.
[[nodiscard]] std::vector<std::uint32_t> fc_batches(const ConvLayer& l, std::uint32_t images,
                                                    const ConvHardware& hw);

// `one` (a program of one image, build_program) rewritten to run `images` images as above;
// `one` itself when `images` is 1. Throws GraphError.
[[nodiscard]] NetProgram batch_program(NetProgram one, unsigned images);

// Writes images [first, first + p.images) of `batch` into the input's slots.
void write_batch_input(const NetProgram& p, const models::graph::Tensor& batch, std::size_t first,
                       models::ops::Memory& mem);

}  // namespace octasim::firmware::net
