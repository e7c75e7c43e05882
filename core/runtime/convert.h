// Row conversions between the GM dtypes and the runtime's two compute lanes.
//
// Local buffers hold every float dtype as fp32 and every integer dtype (int32, int8,
// bool) as int32, so vector loops only ever see float or int32. These loops move a
// contiguous or strided row of GM elements into a lane row and back, rounding to the
// destination dtype (nearest even for fp16/bf16, nearest even and saturating for
// integers, as HostTensor::set does). The fp16 paths use F16C where the build has it.
#pragma once

#include <cstdint>

#include "core/dtype.h"

namespace pto::runtime {

// The lane a dtype is computed (and held in local buffers) in: F32 or I32.
inline DType lane_of(DType t) { return is_float(t) ? DType::F32 : DType::I32; }
constexpr int kLaneBytes = 4;

// src: n elements of dtype `from` at element stride `stride` (0 broadcasts one value).
void load_row(float* dst, const void* src, DType from, int64_t stride, int64_t n);
void load_row(int32_t* dst, const void* src, DType from, int64_t stride, int64_t n);
// dst: n elements of dtype `to` at element stride `stride`; `accumulate` adds into it.
void store_row(void* dst, DType to, int64_t stride, const float* src, int64_t n, bool accumulate);
void store_row(void* dst, DType to, int64_t stride, const int32_t* src, int64_t n, bool accumulate);

// Rounds fp32 values in place to the nearest value of `to` (fp16/bf16; no-op for fp32),
// which is what a Cast to a narrow float leaves in a buffer computed in fp32.
void round_to_dtype(float* data, int64_t n, DType to);

// Float -> integer as HostTensor stores it: nearest even, saturating, NaN -> 0.
int32_t float_to_int_saturating(double v, DType to);

}  // namespace pto::runtime
