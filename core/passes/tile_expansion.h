// Pass 3, tile expansion with memory-level assignment (the Tile Graph).
//
// Turns each kernel's iteration space into tiles: the Cube tile clamped to the matmul's
// dims and its K loop (steps, A/B reload periods, split-K chunks), the vector tile (or
// the sub-tile of a Cube tile for an epilogue), the UB layout of a vector task, and the
// bytes each local level holds for one task with n-buffering. The verifier
// (tile_rules.h) checks every rule on the result. Split-K adds the TFILL kernel that
// zeroes the output before the chunks add into it.
//
// analyze() and compile() both start from this plan, which is why they agree; it is
// arithmetic only (strings appear for violations alone), since analyze() runs it per
// candidate config.
#pragma once

#include "core/passes/pipeline_ir.h"
#include "core/target.h"

namespace pto::passes {

TilePlan expand_tiles(const TensorGraph& g, const Partition& p, const ResolvedConfig& config, const Target& t);

}  // namespace pto::passes
