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
  // evicting the least recently used line. `write` marks the line dirty.
  Access touch(int64_t line, bool write);
  // The fill of the line in `slot` (from touch) completes at `time`.
  void set_ready(int32_t slot, double time) { nodes_[slot].ready = time; }

  int64_t dirty_lines() const;
  int64_t line_bytes() const { return line_bytes_; }

 private:
  struct Node {
    int64_t line = 0;
    double ready = 0;
    int32_t prev = -1, next = -1;
    bool dirty = false;
  };
  void unlink(int32_t n);
  void push_front(int32_t n);

  int64_t line_bytes_;
  int64_t capacity_lines_ = 0;
  std::vector<Node> nodes_;            // grows up to capacity_lines_, then lines are evicted
  std::vector<int32_t> node_of_line_;  // -1: not resident; grows with the highest line seen
  int32_t head_ = -1, tail_ = -1;      // most / least recently used
};

}  // namespace pto::sim
