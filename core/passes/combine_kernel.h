// Pass 3 (tile expansion): a Combine kernel, the compiler's own vector kernel that
// reduces partial results into an output. Two tilings write partials: flash_attention's
// KV split (FlashDecoding: unnormalised O, running max and sum per split,
// attention_tiling.cpp) and fp32 split-K (a sum per K chunk, tile_expansion.cpp), which
// PyPTO too adds up with vector adds rather than atomically. One kernel shape serves
// both: a small graph from the partials to the output, run over tiles that keep the
// partials' index whole.
#pragma once

#include <vector>

#include "core/passes/pipeline_ir.h"
#include "core/passes/tile_rules.h"

namespace pto::passes {

// The kernel that evaluates `g` (its tensors as gm_tensors(g) numbers them, mapped to
// the program's by `program_id`), run after kernel `after`. Dim `whole` of the
// iteration space (the partials' index, which `g` reduces) stays whole in every tile;
// the last two dims take the compiler's internal tile, narrowed (rows first) until the
// task's buffers fit in UB.
TiledKernel combine_kernel(const TensorGraph& g, const std::vector<int>& program_id, int whole, int after,
                           const Target& target, RuleCheck& check);

}  // namespace pto::passes
