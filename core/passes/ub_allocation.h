// UB buffer allocation of one vector task (part of pass 3, tile expansion).
//
// A fused vector kernel holds many temporaries, but few are alive at once; giving each
// its own space would overstate the UB need and reject tiles that fit. Values are
// placed first-fit in definition order, and a value's space is free again after its
// last use (a destination never shares space with a source of the same instruction).
// n-buffered inputs keep their n slots for the whole task: the next task's loads land
// in the other slots while this one computes.
#pragma once

#include "core/passes/pipeline_ir.h"

namespace pto::passes {

// Bytes of a value's buffer for this tile: the spanned tile dims times the dtype size.
int64_t value_bytes(const VecValue& v, const Shape& tile);

// Fills out.buffers (every value's slots with offsets aligned to align_bytes) and out.ub_bytes.
void allocate_ub(const VectorBody& body, const Shape& tile, int nbuffer, int align_bytes, VecTiling& out);

}  // namespace pto::passes
