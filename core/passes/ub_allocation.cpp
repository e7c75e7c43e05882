// UB buffer allocation with liveness-based reuse (see ub_allocation.h).
#include "core/passes/ub_allocation.h"

#include <algorithm>

namespace pto::passes {

int64_t value_bytes(const VecValue& v, const Shape& tile) {
  int64_t elems = 1;
  for (size_t d = 0; d < tile.size(); ++d)
    if (spans(v.mask, static_cast<int>(d))) elems *= tile[d];
  return elems * dtype_size(v.dtype);
}

void allocate_ub(const VectorBody& body, const Shape& tile, int nbuffer, int align_bytes, VecTiling& out) {
  const int end = body.end_position();
  struct Live {
    int first, last;
  };
  std::vector<Live> live;
  out.buffers.clear();
  out.ub_bytes = 0;
  for (size_t vi = 0; vi < body.values.size(); ++vi) {
    const VecValue& v = body.values[vi];
    const bool load = v.kind == ValueKind::Load;
    const int slots = load ? nbuffer : 1;
    const Live range{v.def, load && nbuffer >= 2 ? end : v.last_use};
    const int64_t bytes = value_bytes(v, tile);
    for (int s = 0; s < slots; ++s) {
      // Lowest aligned offset clear of every placed buffer alive at the same time.
      int64_t offset = 0;
      for (bool moved = true; moved;) {
        moved = false;
        for (size_t j = 0; j < out.buffers.size(); ++j) {
          const UbBuffer& p = out.buffers[j];
          const bool overlap_time = live[j].first <= range.last && range.first <= live[j].last;
          const bool overlap_space = byte_ranges_overlap(offset, bytes, p.offset, p.bytes);
          if (overlap_time && overlap_space) {
            offset = align_up(p.offset + p.bytes, align_bytes);
            moved = true;
          }
        }
      }
      out.buffers.push_back({static_cast<int>(vi), s, bytes, offset});
      live.push_back(range);
      out.ub_bytes = std::max(out.ub_bytes, offset + bytes);
    }
  }
}

}  // namespace pto::passes
