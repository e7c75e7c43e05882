// L2Cache: the shared L2 as the simulator sees it — which GM lines are resident, when
// an in-flight fill will have arrived, and which lines are dirty.
//
// Exact LRU over lines, like PyPTO's own L2 model. Set-associative models with hashed
// indices were tried: their conflict misses made results depend on the interleaving of
// cores in ways LRU's stack property rules out (a faster HBM could then lose a hit and
// run slower). The LRU list is intrusive over a node pool of the cache's capacity, and
// lines map to nodes through a dense table over the program's GM lines, so an access
// is a handful of array reads. Both grow with the lines a program touches, so a small
// program does not pay for a 192 MiB L2.
#pragma once

#include <cstdint>
#include <vector>

namespace pto::sim {

class L2Cache {
 public:
  // capacity_bytes 0 = no L2: every access misses and nothing is kept.
  L2Cache(int64_t capacity_bytes, int64_t line_bytes);

  struct Access {
    bool hit = false;
    double ready = 0;            // a hit on a line still being filled waits until then
    int32_t slot = -1;           // where the line lives now (-1: not cached)
    bool writes_back = false;    // a dirty line goes to HBM: the one evicted, or without an L2 the one written
  };

  // Sizes the tables for lines [0, lines) up front (they grow on demand anyway).
  void reserve(int64_t lines);

  // Looks `line` (>= 0) up and makes it the most recently used; a miss allocates it,
  // evicting the least recently used line. `write` marks the line dirty. Inline: the
  // simulator calls it for every line every GM transfer touches.
  Access touch(int64_t line, bool write) {
    Access a;
    if (capacity_lines_ == 0) {
      a.writes_back = write;
      return a;
    }
    if (line >= static_cast<int64_t>(node_of_line_.size())) grow_table(line);
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
  // The fill of the line in `slot` (from touch) completes at `time`.
  void set_ready(int32_t slot, double time) { nodes_[slot].ready = time; }

  int64_t dirty_lines() const;
  int64_t line_bytes() const { return line_bytes_; }
  // The line holding byte `addr` (>= 0): a shift for the usual power-of-two line size,
  // where a division would cost more than the lookup.
  int64_t line_of(int64_t addr) const { return line_shift_ >= 0 ? addr >> line_shift_ : addr / line_bytes_; }

 private:
  struct Node {
    int64_t line = 0;
    double ready = 0;
    int32_t prev = -1, next = -1;
    bool dirty = false;
  };
  void unlink(int32_t n) {
    Node& x = nodes_[n];
    (x.prev >= 0 ? nodes_[x.prev].next : head_) = x.next;
    (x.next >= 0 ? nodes_[x.next].prev : tail_) = x.prev;
  }
  void push_front(int32_t n) {
    nodes_[n].prev = -1;
    nodes_[n].next = head_;
    (head_ >= 0 ? nodes_[head_].prev : tail_) = n;
    head_ = n;
  }
  // Makes node_of_line_ cover `line`, at least doubling it.
  void grow_table(int64_t line);

  int64_t line_bytes_;
  int line_shift_ = -1;                // log2(line_bytes_) when a power of two, else -1
  int64_t capacity_lines_ = 0;
  std::vector<Node> nodes_;            // grows up to capacity_lines_, then lines are evicted
  std::vector<int32_t> node_of_line_;  // -1: not resident; grows with the highest line seen
  int32_t head_ = -1, tail_ = -1;      // most / least recently used
};

}  // namespace pto::sim
