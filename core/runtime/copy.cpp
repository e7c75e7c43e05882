// Window copies: one row at a time, straight memcpy when nothing converts, converting
// straight into or out of a contiguous fp32 row, else through an fp32 (or, between
// integer dtypes, int32) chunk.
#include "core/runtime/copy.h"

#include <algorithm>
#include <cstring>

#include "core/runtime/convert.h"

namespace pto::runtime {
namespace {

constexpr int64_t kCopyChunk = 256;

template <typename LaneT>
void convert_row(char* dst, DType to, int64_t dst_stride, const char* src, DType from,
                 int64_t src_stride, int64_t n, bool accumulate) {
  LaneT tmp[kCopyChunk];
  for (int64_t start = 0; start < n; start += kCopyChunk) {
    const int64_t len = std::min(kCopyChunk, n - start);
    load_row(tmp, src + start * src_stride * dtype_size(from), from, src_stride, len);
    store_row(dst + start * dst_stride * dtype_size(to), to, dst_stride, tmp, len, accumulate);
  }
}

}  // namespace

void copy_window(const View& dst, const View& src, const Dims& extent, bool accumulate) {
  const bool same_dtype = dst.dtype == src.dtype;
  const bool integer_lane = lane_of(dst.dtype) == DType::I32 && lane_of(src.dtype) == DType::I32;
  for_each_row<2>(extent, {&dst, &src}, [&](const std::array<char*, 2>& p, int64_t n,
                                             const std::array<int64_t, 2>& s) {
    if (same_dtype && !accumulate && s[0] == 1 && s[1] == 1) {
      std::memcpy(p[0], p[1], static_cast<size_t>(n * dtype_size(dst.dtype)));
    } else if (dst.dtype == DType::F32 && s[0] == 1 && !accumulate) {  // into an fp32 lane row
      load_row(reinterpret_cast<float*>(p[0]), p[1], src.dtype, s[1], n);
    } else if (src.dtype == DType::F32 && s[1] == 1) {  // out of an fp32 lane row
      store_row(p[0], dst.dtype, s[0], reinterpret_cast<const float*>(p[1]), n, accumulate);
    } else if (integer_lane) {
      convert_row<int32_t>(p[0], dst.dtype, s[0], p[1], src.dtype, s[1], n, accumulate);
    } else {
      convert_row<float>(p[0], dst.dtype, s[0], p[1], src.dtype, s[1], n, accumulate);
    }
  });
}

}  // namespace pto::runtime
