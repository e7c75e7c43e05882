#include "search/tile_candidates.h"

#include <algorithm>

#include "core/dtype.h"

namespace pto::search {

namespace {

constexpr int64_t kMnL1Factors[] = {1, 2, 4};
constexpr int64_t kKL1Factors[] = {1, 2, 3, 4};  // the guide's kL1 = 1..4 x kL0
// A UB row of fp16 must be 32 bytes: 16 elements is the smallest split of a last dim
// that fits every float type (int8 tiles of 16 are left to analyze to reject).
constexpr int64_t kMinLastDimSplit = 16;
// The narrowest chunk a split reduction streams its row in: below it the chunk loop's
// per-instruction latencies outweigh what a smaller UB tile buys.
constexpr int64_t kMinReducedChunk = 512;

// docs/compiler.md, "Cube tile": sizes align to 16 elements, 32 for 1-byte inputs.
int64_t cube_alignment(DType input) { return dtype_size(input) == 1 ? 32 : 16; }

// Powers of two from `from` below `dim`, then `dim` itself.
std::vector<int64_t> powers_then_whole(int64_t from, int64_t dim) {
  std::vector<int64_t> sizes;
  for (int64_t s = from; s < dim; s *= 2) sizes.push_back(s);
  sizes.push_back(dim);
  return sizes;
}

}  // namespace

std::optional<MatmulExtents> matmul_extents(const TensorGraph& graph) {
  std::optional<MatmulExtents> e;
  for (const Node& n : graph.nodes()) {
    if (n.kind != OpKind::Matmul) continue;
    const Node& a = graph.node(n.inputs[0]);
    const size_t r = n.shape.size();
    const int64_t k = a.shape[a.shape.size() - (n.transpose_a ? 2 : 1)];
    if (!e) e = MatmulExtents{};
    e->m = std::max(e->m, n.shape[r - 2]);
    e->n = std::max(e->n, n.shape[r - 1]);
    e->k = std::max(e->k, k);
    e->align = std::max(e->align, cube_alignment(a.dtype));
  }
  return e;
}

std::optional<VecExtents> vec_extents(const TensorGraph& graph) {
  // Right-aligned, numpy-style, as a kernel lines its tensors up; index 0 = last dim.
  Shape widest_from_end;
  std::vector<bool> reduced_from_end;
  auto widen = [&](const Shape& s) {
    if (s.size() > widest_from_end.size()) {
      widest_from_end.resize(s.size(), 1);
      reduced_from_end.resize(s.size(), false);
    }
    for (size_t i = 0; i < s.size(); ++i) widest_from_end[i] = std::max(widest_from_end[i], s[s.size() - 1 - i]);
  };
  bool any = false;
  for (NodeId id : graph.compute_nodes()) {
    const Node& n = graph.node(id);
    if (n.kind == OpKind::Matmul) continue;
    any = true;
    widen(n.shape);
    for (NodeId in : n.inputs) widen(graph.node(in).shape);
    if (is_reduction(n.kind)) {
      const Shape& src = graph.node(n.inputs[0]).shape;
      reduced_from_end[src.size() - 1 - static_cast<size_t>(n.dim)] = true;
    }
  }
  if (!any) return std::nullopt;
  VecExtents e;
  e.widest.assign(widest_from_end.rbegin(), widest_from_end.rend());
  e.reduced.assign(reduced_from_end.rbegin(), reduced_from_end.rend());
  return e;
}

std::vector<int64_t> l0_sizes(int64_t dim, int64_t align) {
  return powers_then_whole(align, align_up(dim, align));
}

std::vector<int64_t> l1_sizes(int64_t l0, int64_t dim, int64_t align, std::span<const int64_t> factors) {
  const int64_t whole = align_up(dim, align);
  std::vector<int64_t> sizes;
  for (int64_t f : factors) {
    sizes.push_back(l0 * f);
    if (l0 * f >= whole) break;
  }
  return sizes;
}

std::vector<CubeTile> cube_tile_candidates(const MatmulExtents& e) {
  struct Axis {
    int64_t l0, l1;
  };
  auto axis = [&](int64_t dim, std::span<const int64_t> factors) {
    std::vector<Axis> out;
    for (int64_t l0 : l0_sizes(dim, e.align))
      for (int64_t l1 : l1_sizes(l0, dim, e.align, factors)) out.push_back({l0, l1});
    return out;
  };
  const std::vector<Axis> ms = axis(e.m, kMnL1Factors), ns = axis(e.n, kMnL1Factors),
                          ks = axis(e.k, kKL1Factors);
  const int64_t whole_k = align_up(e.k, e.align);
  std::vector<CubeTile> tiles;
  for (const Axis& m : ms) {
    for (const Axis& n : ns) {
      for (const Axis& k : ks) {
        CubeTile t;
        t.mL0 = m.l0, t.mL1 = m.l1, t.nL0 = n.l0, t.nL1 = n.l1;
        t.kL0 = k.l0, t.kAL1 = t.kBL1 = k.l1;
        t.k_short_form = true;
        tiles.push_back(t);
        const int64_t resident = align_up(whole_k, k.l1);  // a multiple of kL1, as kAL1/kBL1 need
        if (resident == k.l1) continue;
        t.k_short_form = false;
        t.kAL1 = resident;
        tiles.push_back(t);  // A resident in L1
        t.kAL1 = k.l1;
        t.kBL1 = resident;
        tiles.push_back(t);  // B resident in L1
      }
    }
  }
  return tiles;
}

std::vector<Shape> vec_tile_candidates(const VecExtents& e, int64_t min_elements) {
  const size_t rank = e.widest.size();
  std::vector<std::vector<int64_t>> per_dim(rank);
  for (size_t d = 0; d < rank; ++d) {
    const int64_t w = e.widest[d];
    per_dim[d] = e.reduced[d] ? powers_then_whole(std::min(kMinReducedChunk, w), w)
                              : powers_then_whole(d + 1 == rank ? std::min(kMinLastDimSplit, w) : 1, w);
  }
  std::vector<Shape> tiles;
  std::vector<size_t> at(rank, 0);  // an odometer over the per-dim lists, last dim fastest
  while (true) {
    Shape t(rank);
    for (size_t d = 0; d < rank; ++d) t[d] = per_dim[d][at[d]];
    if (num_elements(t) >= min_elements || t == e.widest) tiles.push_back(t);
    size_t d = rank;
    while (d > 0 && ++at[d - 1] == per_dim[d - 1].size()) at[--d] = 0;
    if (d == 0) break;
  }
  return tiles;
}

std::vector<std::pair<int64_t, int64_t>> l2_group_candidates(int cores) {
  std::vector<std::pair<int64_t, int64_t>> groups;
  for (int64_t m = 1; m <= cores; ++m)
    if (cores % m == 0) groups.emplace_back(m, cores / m);
  return groups;
}

}  // namespace pto::search
