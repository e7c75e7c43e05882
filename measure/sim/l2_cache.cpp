#include "measure/sim/l2_cache.h"

#include <algorithm>
#include <bit>
#include <limits>

#include "core/error.h"

namespace pto::sim {

L2Cache::L2Cache(int64_t capacity_bytes, int64_t line_bytes) : line_bytes_(line_bytes) {
  if (line_bytes > 0 && std::has_single_bit(static_cast<uint64_t>(line_bytes)))
    line_shift_ = std::countr_zero(static_cast<uint64_t>(line_bytes));
  const int64_t lines = line_bytes > 0 ? capacity_bytes / line_bytes : 0;
  if (lines > std::numeric_limits<int32_t>::max())
    usage_error("L2 of " + std::to_string(capacity_bytes) + " bytes has more lines than the L2 model tracks");
  capacity_lines_ = std::max<int64_t>(lines, 0);
}

void L2Cache::reserve(int64_t lines) {
  if (capacity_lines_ == 0) return;
  node_of_line_.resize(static_cast<size_t>(std::max<int64_t>(lines, static_cast<int64_t>(node_of_line_.size()))), -1);
  nodes_.reserve(static_cast<size_t>(std::min(lines, capacity_lines_)));
}

void L2Cache::grow_table(int64_t line) {
  node_of_line_.resize(static_cast<size_t>(std::max<int64_t>(line + 1, 2 * static_cast<int64_t>(node_of_line_.size()))), -1);
}

int64_t L2Cache::dirty_lines() const {
  return std::count_if(nodes_.begin(), nodes_.end(), [](const Node& x) { return x.dirty; });
}

}  // namespace pto::sim
