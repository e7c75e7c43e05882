// The vector unit on the CPU: TVEC, TREDUCE, TFILL and the causal mask over windows of
// row-major local buffers.
//
// Views hold fp32 or int32 lanes (core/runtime/convert.h). All-fp32 operations run as
// contiguous row loops the compiler vectorises (broadcast operands are rows of stride
// 0); anything touching an int32 lane runs an exact per-element loop, since integer
// vector work is rare and must be exact rather than fast.
#pragma once

#include <optional>

#include "core/runtime/strided.h"
#include "core/tensor_graph.h"

namespace pto::runtime {

struct ElementwiseArgs {
  OpKind op = OpKind::Add;
  const View* a = nullptr;           // first source (strides for the dst extent)
  const View* b = nullptr;           // second source of a binary op, unless `scalar`
  std::optional<double> scalar;      // tensor-scalar form: a op s (s op a if scalar_first)
  bool scalar_first = false;
  DType dst_dtype = DType::F32;      // the buffer's declared dtype: Cast rounds to it
};

// dst = op(a[, b | scalar]) over `extent`. Unary, binary, Cast and the view kinds
// (Broadcast/Slice/Reshape copy). Internal Error for ops the vector unit lacks.
void elementwise(const View& dst, const Dims& extent, const ElementwiseArgs& args);

// dst = reduce(src) over dim `dim` of `src_extent`; `dst` carries strides for
// `src_extent` with 0 along `dim`. Sum, Amax or Amin. dst may alias src's first slice.
void reduce(OpKind op, const View& dst, const View& src, const Dims& src_extent, int dim);

// dst = value over `extent`, rounded to `dst_dtype`.
void fill(const View& dst, const Dims& extent, double value, DType dst_dtype);

// dst = src, except -inf where col > row + (cols - rows) in global coordinates: the
// window's element [.., i, j] sits at global (row0 + i, col0 + j) of a rows x cols space.
struct MaskPosition {
  int64_t row0 = 0, col0 = 0, rows = 0, cols = 0;
};
void causal_mask(const View& dst, const View& src, const Dims& extent, const MaskPosition& pos);

}  // namespace pto::runtime
