// Dims helpers and the dim matching of a source window against a destination extent.
#include "core/runtime/strided.h"

#include "core/error.h"

namespace pto::runtime {
namespace {

Dims squeeze_ones(const Dims& extent, const Dims& strides, Dims* kept_strides) {
  Dims out;
  for (int d = 0; d < extent.rank; ++d) {
    if (extent[d] == 1) continue;
    kept_strides->v[out.rank] = strides[d];
    out.v[out.rank++] = extent[d];
  }
  kept_strides->rank = out.rank;
  return out;
}

// Both extents with their size-1 dims removed must be equal; the source's strides then
// map onto the destination's non-1 dims in order.
bool align_ignoring_ones(const Dims& dst_extent, const Dims& src_extent, const Dims& src_strides,
                         Dims* out) {
  Dims unused, kept;
  const Dims dst_sq = squeeze_ones(dst_extent, dst_extent, &unused);
  const Dims src_sq = squeeze_ones(src_extent, src_strides, &kept);
  if (dst_sq.shape() != src_sq.shape()) return false;
  out->rank = dst_extent.rank;
  int k = 0;
  for (int d = 0; d < dst_extent.rank; ++d) out->v[d] = dst_extent[d] == 1 ? 0 : kept[k++];
  return true;
}

bool align_broadcast(const Dims& dst_extent, const Dims& src_extent, const Dims& src_strides, Dims* out) {
  out->rank = dst_extent.rank;
  const int shift = src_extent.rank - dst_extent.rank;
  for (int d = 0; d < shift; ++d)
    if (src_extent[d] != 1) return false;
  for (int d = 0; d < dst_extent.rank; ++d) {
    const int s = d + shift;
    if (s < 0 || src_extent[s] == 1) {
      out->v[d] = 0;
    } else if (src_extent[s] == dst_extent[d]) {
      out->v[d] = src_strides[s];
    } else {
      return false;
    }
  }
  return true;
}

}  // namespace

Dims Dims::of(const Shape& s) {
  if (static_cast<int>(s.size()) > kMaxRank)
    internal_error("runtime: rank " + std::to_string(s.size()) + " of " + shape_str(s) +
                   " exceeds the runtime's limit of " + std::to_string(kMaxRank));
  Dims d;
  d.rank = static_cast<int>(s.size());
  for (int i = 0; i < d.rank; ++i) d.v[i] = s[i];
  return d;
}

int64_t Dims::elements() const {
  int64_t n = 1;
  for (int i = 0; i < rank; ++i) n *= v[i];
  return n;
}

Dims row_major_strides(const Dims& shape) {
  Dims st;
  st.rank = shape.rank;
  int64_t s = 1;
  for (int d = shape.rank - 1; d >= 0; --d) {
    st.v[d] = s;
    s *= shape[d];
  }
  return st;
}

Dims align_strides(const Dims& dst_extent, const Dims& src_extent, const Dims& src_strides,
                   Match match, const std::string& what) {
  Dims out;
  if (match == Match::SameElements && dst_extent.elements() == src_extent.elements() &&
      align_ignoring_ones(dst_extent, src_extent, src_strides, &out))
    return out;
  if (align_broadcast(dst_extent, src_extent, src_strides, &out)) return out;
  if (match == Match::Broadcast && align_ignoring_ones(dst_extent, src_extent, src_strides, &out)) return out;
  internal_error("runtime: " + what + ": source window " + shape_str(src_extent.shape()) +
                 " does not match destination window " + shape_str(dst_extent.shape()));
}

}  // namespace pto::runtime
