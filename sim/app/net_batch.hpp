// `octasim net --batch N` (firmware/net/batch.hpp): the layer table of a batched program — one row
// per layer of the network, its per-image copies or its multi-batch layers summed over the
// batch — with the cycles per batch and per frame (the batch's / N).
#pragma once

#include "firmware/net/program.hpp"
#include "sim/app/net_run.hpp"

namespace octasim::app {

// `macs_per_cycle`: the MAC array's peak at the network's precision.
void print_batch_layers(const firmware::net::NetProgram& p, const Timing& timing,
                        const BatchResult& r, unsigned macs_per_cycle);

}  // namespace octasim::app
