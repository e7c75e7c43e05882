// Pass 3 (tile expansion), the schedule of a split reduction: a vector kernel whose tile
// cuts the dim its reductions run over.
//
// Such a task still owns whole rows, but reads them in chunks of the tile's width, so a
// reduction completes only after the last chunk. Whatever reads a completed reduction
// (softmax's x - max, layernorm's x - mean) needs a further pass over the chunks, which
// reloads the chunk inputs and recomputes the chunk values it needs instead of keeping
// them: they do not fit, which is why the tile cut the row. A value's level is the pass
// from which on it is available; the plan lists, per pass, the loads, steps,
// reductions and stores of one chunk, and the steps on row values (statistics such as
// mean or 1/sqrt(var)) that run once between passes.
//
// Two patterns need one pass fewer when folded online (docs/compiler.md, "Split
// reductions"): softmax's max and sum of exp(x - max) (a running max, the running sum
// rescaled by exp(old max - new max)) and layernorm's mean and sum of squared
// deviations (Chan's parallel combination of per-chunk means and M2). The config's
// `reduce` form says whether to fold them; the tuner tries both.
#pragma once

#include <optional>
#include <string>

#include "core/passes/pipeline_ir.h"

namespace pto::passes {

// The plan for cutting `dim`, or nullopt with `why` when the body cannot stream (it
// reduces over another dim as well).
std::optional<StreamPlan> plan_stream(const VectorBody& body, int dim, ReduceForm form, std::string& why);

}  // namespace pto::passes
