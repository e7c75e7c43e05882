// Text dumps of the Tile Graph and the Block Graph (pto-tune compile --emit tile|block).
//
// They show what the passes decided in the vocabulary of the config a user writes:
// per kernel its nodes, iteration space, tile shape, tile counts and tails, where each
// tensor lives and how many bytes its buffers take, the footprint per level against
// the capacity and the verifier's result; per block program its core, buffers and the
// tasks that share it. Graph tensor names appear throughout.
#pragma once

#include <string>

#include "core/passes/pipeline_ir.h"
#include "core/target.h"

namespace pto::passes {

std::string dump_tile_graph(const TensorGraph& g, const Partition& p, const TilePlan& plan,
                            const ResolvedConfig& config, const Target& t);

std::string dump_block_graph(const Program& program);

}  // namespace pto::passes
