// Byte sizes of Cube buffers (L1 operands, L0A/L0B/L0C).
//
// Fractal layouts pad both matrix dims to the fractal alignment (16 elements, 32 for
// 1-byte types, ascend-facts.md "Tile-shape rules"). The verifier's capacity checks and
// LocalBuffer::bytes() both go through here, so a footprint and its rule agree exactly.
#pragma once

#include <cstdint>

#include "core/dtype.h"
#include "core/shape.h"

namespace pto::passes {

inline int64_t cube_align(DType t) { return dtype_size(t) == 1 ? 32 : 16; }

inline int64_t cube_buffer_bytes(int64_t rows, int64_t cols, DType t) {
  const int64_t a = cube_align(t);
  return align_up(rows, a) * align_up(cols, a) * dtype_size(t);
}

}  // namespace pto::passes
