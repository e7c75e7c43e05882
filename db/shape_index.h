// ShapeIndex: the tuned shapes of one op, dtype, attrs, target and rank, searched by
// distance in log2 per dim — the JIT lookup's "nearest tuned shape" (db/config_lookup.h).
//
// The order it serves shapes in is one total order, the same a linear scan gives:
// by distance (the sum over dims of |log2 tuned - log2 wanted|, summed dim by dim in
// that order, so equal sums are equal bit for bit), ties to the smaller shape
// (lexicographically), and never the wanted shape itself (distance 0: an exact hit is
// not a neighbour). nearest() walks that order until the caller accepts a shape, so
// when the nearest tuned config does not fit the new shape the next one is tried.
//
// Why an index: with 10,000 tuned shapes of one op a linear scan costs ~50 us, more
// than the lookup's 20 us budget (results/lookup_latency.md). The index is a k-d tree
// over log2 dims, walked best-first (Hjaltason and Samet's incremental nearest
// neighbour): a priority queue holds subtrees keyed by the least distance any of their
// shapes can have and shapes keyed by their distance. A subtree's bound is summed from
// per-dim terms that are never larger than a shape's own (floating-point subtraction
// and addition are monotone), and a subtree is opened before a shape of equal key, so
// no shape is served while a nearer or equally near smaller one waits unopened.
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <span>
#include <vector>

#include "core/shape.h"

namespace pto::db {

class ShapeIndex {
 public:
  // Distinct shapes of rank `rank`, their dims laid out one shape after another; a
  // shape's position (its first dim's offset / rank) is what nearest() returns.
  // Internal Error when `dims` is not a whole number of shapes of a rank above 0.
  ShapeIndex(size_t rank, std::span<const int64_t> dims);

  // The first shape in the order above that `accept` takes (its position), or nullopt
  // when it takes none, or `wanted` is of another rank.
  std::optional<size_t> nearest(const Shape& wanted, const std::function<bool(size_t)>& accept) const;

  // The distance the order uses, for shapes of equal rank: also what a brute-force
  // check compares against.
  static double distance(std::span<const double> log2_a, std::span<const double> log2_b);
  // The same, from the dims of two shapes of equal rank.
  static double distance(const Shape& a, const Shape& b);

 private:
  struct Node {
    size_t begin, end;           // points_[begin, end) in by-tree order
    size_t left = 0, right = 0;  // children (0: a leaf; the root is node 0)
  };
  size_t build(size_t begin, size_t end);
  double bound(size_t node, std::span<const double> wanted) const;

  size_t rank_ = 0;
  std::vector<size_t> order_;      // shape positions, ascending by shape: index = tie rank
  std::vector<size_t> points_;     // tie ranks, permuted into tree order
  std::vector<double> log2_;       // tie rank x rank_: log2 of the dims
  std::vector<Node> nodes_;
  std::vector<double> lo_, hi_;    // node x rank_: bounding box in log2
};

}  // namespace pto::db
