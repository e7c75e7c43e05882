// Window copies with dtype conversion: what TLOAD to UB, TSTORE, and TMOV between
// row-major local buffers do.
#pragma once

#include "core/runtime/strided.h"

namespace pto::runtime {

// dst[i] = src[i] (or dst[i] += src[i] with `accumulate`) over `extent`, converting
// from src.dtype to dst.dtype. Both views carry strides for `extent`'s dims.
void copy_window(const View& dst, const View& src, const Dims& extent, bool accumulate);

}  // namespace pto::runtime
