#include "measure/sim/l2_cache.h"

#include <algorithm>
#include <limits>

#include "core/error.h"

namespace pto::sim {

L2Cache::L2Cache(int64_t capacity_bytes, int64_t line_bytes) : line_bytes_(line_bytes) {
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

void L2Cache::unlink(int32_t n) {
  Node& x = nodes_[n];
  (x.prev >= 0 ? nodes_[x.prev].next : head_) = x.next;
  (x.next >= 0 ? nodes_[x.next].prev : tail_) = x.prev;
}

void L2Cache::push_front(int32_t n) {
  nodes_[n].prev = -1;
  nodes_[n].next = head_;
  (head_ >= 0 ? nodes_[head_].prev : tail_) = n;
  head_ = n;
}

L2Cache::Access L2Cache::touch(int64_t line, bool write) {
  Access a;
  if (capacity_lines_ == 0) {
    a.writes_back = write;
    return a;
  }
  if (line >= static_cast<int64_t>(node_of_line_.size()))
    node_of_line_.resize(static_cast<size_t>(std::max<int64_t>(line + 1, 2 * static_cast<int64_t>(node_of_line_.size()))), -1);
  int32_t n = node_of_line_[line];
  a.hit = n >= 0;
  if (a.hit) {
    unlink(n);
  } else if (static_cast<int64_t>(nodes_.size()) < capacity_lines_) {
    n = static_cast<int32_t>(nodes_.size());
    nodes_.emplace_back();
  } else {  // evict the least recently used line
    n = tail_;
    unlink(n);
    a.writes_back = nodes_[n].dirty;
    node_of_line_[nodes_[n].line] = -1;
  }
  Node& x = nodes_[n];
  if (!a.hit) x = Node{line, 0, -1, -1, false};
  x.dirty |= write;
  push_front(n);
  node_of_line_[line] = n;
  a.ready = x.ready;
  a.slot = n;
  return a;
}

int64_t L2Cache::dirty_lines() const {
  return std::count_if(nodes_.begin(), nodes_.end(), [](const Node& x) { return x.dirty; });
}

}  // namespace pto::sim
