// UB buffer allocation of one vector task (part of pass 3, tile expansion).
//
// A fused vector kernel holds many temporaries, but few are alive at once; giving each
// its own space would overstate the UB need and reject tiles that fit. Values are
// placed first-fit in definition order, and a value's space is free again after its
// last use (a destination never shares space with a source of the same instruction).
// n-buffered inputs keep their n slots for the whole task: the next task's loads land
// in the other slots while this one computes.
//
// A streamed kernel (a split reduction, stream_plan.h) is laid out in three regions:
// its chunk inputs' n slots, which every pass reuses; what lives for the whole task
// (row inputs, reductions and their accumulators, the statistics between passes); and
// per pass the chunk values of one chunk, first-fit by liveness within the chunk, the
// passes sharing that region. Inputs never share bytes with a chunk's stored values, so
// the next chunk's loads need not wait for the previous chunk's stores.
#pragma once

#include "core/passes/pipeline_ir.h"

namespace pto::passes {

// Bytes of a value's buffer for this tile: the spanned tile dims times the dtype size.
int64_t value_bytes(const VecValue& v, const Shape& tile);

// Fills out.buffers (every value's slots with offsets aligned to align_bytes) and out.ub_bytes.
void allocate_ub(const VectorBody& body, const Shape& tile, int nbuffer, int align_bytes, VecTiling& out);

// The same for a streamed kernel: `tile` has the chunk width along the streamed dim;
// out.stream holds the plan.
void allocate_stream_ub(const VectorBody& body, const Shape& tile, int nbuffer, int align_bytes, VecTiling& out);

// The scratch buffers a streamed kernel holds besides its body values, by name: an
// accumulator's other half, the merges' temporaries. Codegen and allocation share it.
struct StreamScratch {
  std::string name;
  bool chunk = false;   // spans the streamed dim (one chunk), else one value per row
  DType dtype = DType::F32;
  int pass = -1;        // chunk scratch: the pass that uses it
};
std::vector<StreamScratch> stream_scratch(const VectorBody& body, const StreamPlan& plan);

}  // namespace pto::passes
