// ShapeIndex (see db/shape_index.h): build() splits the widest log2 dim at its median
// down to leaves of kLeaf shapes; nearest() is the best-first walk.
#include "db/shape_index.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <queue>

#include "core/error.h"

namespace pto::db {

namespace {

constexpr size_t kLeaf = 8;

// A subtree (its bound) or a shape (its distance) waiting in the walk's queue.
struct Pending {
  double key;
  size_t id;  // node index, or the shape's tie rank
  bool subtree;
};

// The priority queue's "comes later": a larger key; at equal keys a shape after a
// subtree (which may hold an equal, smaller shape), and the larger shape after the
// smaller.
struct Later {
  bool operator()(const Pending& a, const Pending& b) const {
    if (a.key != b.key) return a.key > b.key;
    if (a.subtree != b.subtree) return b.subtree;
    return a.id > b.id;
  }
};

}  // namespace

double ShapeIndex::distance(std::span<const double> log2_a, std::span<const double> log2_b) {
  double sum = 0;
  for (size_t d = 0; d < log2_a.size(); ++d) sum += std::abs(log2_a[d] - log2_b[d]);
  return sum;
}

double ShapeIndex::distance(const Shape& a, const Shape& b) {
  double sum = 0;
  for (size_t d = 0; d < a.size(); ++d) sum += std::abs(std::log2(double(a[d]) / double(b[d])));
  return sum;
}

ShapeIndex::ShapeIndex(size_t rank, std::span<const int64_t> dims) : rank_(rank) {
  if (rank == 0 || dims.size() % rank != 0)
    internal_error("ShapeIndex: " + std::to_string(dims.size()) + " dims are not shapes of rank " + std::to_string(rank));
  const size_t count = dims.size() / rank;
  auto shape = [&](size_t position) { return dims.subspan(position * rank, rank); };
  order_.resize(count);
  std::iota(order_.begin(), order_.end(), size_t{0});
  std::sort(order_.begin(), order_.end(), [&](size_t a, size_t b) {
    return std::lexicographical_compare(shape(a).begin(), shape(a).end(), shape(b).begin(), shape(b).end());
  });
  log2_.reserve(dims.size());
  for (size_t position : order_)
    for (int64_t dim : shape(position)) log2_.push_back(std::log2(static_cast<double>(dim)));
  points_.resize(count);
  std::iota(points_.begin(), points_.end(), size_t{0});
  if (count == 0) return;
  nodes_.reserve(2 * count / kLeaf + 1);
  build(0, count);
}

size_t ShapeIndex::build(size_t begin, size_t end) {
  const size_t id = nodes_.size();
  nodes_.push_back({begin, end});
  lo_.resize(lo_.size() + rank_, INFINITY);
  hi_.resize(hi_.size() + rank_, -INFINITY);
  double* lo = &lo_[id * rank_];
  double* hi = &hi_[id * rank_];
  for (size_t i = begin; i < end; ++i) {
    for (size_t d = 0; d < rank_; ++d) {
      lo[d] = std::min(lo[d], log2_[points_[i] * rank_ + d]);
      hi[d] = std::max(hi[d], log2_[points_[i] * rank_ + d]);
    }
  }
  if (end - begin <= kLeaf) return id;
  size_t widest = 0;
  for (size_t d = 1; d < rank_; ++d)
    if (hi[d] - lo[d] > hi[widest] - lo[widest]) widest = d;
  const size_t middle = begin + (end - begin) / 2;
  std::nth_element(points_.begin() + begin, points_.begin() + middle, points_.begin() + end,
                   [&](size_t a, size_t b) { return log2_[a * rank_ + widest] < log2_[b * rank_ + widest]; });
  const size_t left = build(begin, middle);
  const size_t right = build(middle, end);
  nodes_[id].left = left;
  nodes_[id].right = right;
  return id;
}

// The least distance a shape inside the node's box can have: per dim, how far `wanted`
// lies outside the box, summed in dim order as distance() sums.
double ShapeIndex::bound(size_t node, std::span<const double> wanted) const {
  double sum = 0;
  for (size_t d = 0; d < rank_; ++d) {
    const double below = lo_[node * rank_ + d] - wanted[d];
    const double above = wanted[d] - hi_[node * rank_ + d];
    sum += std::max({0.0, below, above});
  }
  return sum;
}

std::optional<size_t> ShapeIndex::nearest(const Shape& wanted, const std::function<bool(size_t)>& accept) const {
  if (order_.empty() || wanted.size() != rank_) return std::nullopt;
  std::vector<double> log2_wanted(rank_);
  for (size_t d = 0; d < rank_; ++d) log2_wanted[d] = std::log2(static_cast<double>(wanted[d]));
  std::vector<Pending> storage;
  storage.reserve(64);
  std::priority_queue<Pending, std::vector<Pending>, Later> queue(Later{}, std::move(storage));
  queue.push({bound(0, log2_wanted), 0, true});
  while (!queue.empty()) {
    const Pending next = queue.top();
    queue.pop();
    if (!next.subtree) {
      if (accept(order_[next.id])) return order_[next.id];
      continue;
    }
    const Node& node = nodes_[next.id];
    if (node.left != 0) {
      queue.push({bound(node.left, log2_wanted), node.left, true});
      queue.push({bound(node.right, log2_wanted), node.right, true});
      continue;
    }
    for (size_t i = node.begin; i < node.end; ++i) {
      const size_t tie_rank = points_[i];
      const double d = distance({&log2_[tie_rank * rank_], rank_}, log2_wanted);
      if (d > 0) queue.push({d, tie_rank, false});  // 0: the wanted shape itself
    }
  }
  return std::nullopt;
}

}  // namespace pto::db
