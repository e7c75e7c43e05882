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

std::vector<int64_t> balanced_sizes(int64_t dim, int64_t align) {
  std::vector<int64_t> sizes;
  for (int64_t count = 1; sizes.empty() || sizes.back() > align; ++count) {
    const int64_t size = align_up(ceil_div(dim, count), align);
    if (sizes.empty() || size < sizes.back()) sizes.push_back(size);
  }
  std::reverse(sizes.begin(), sizes.end());
  return sizes;
}

std::vector<AxisTile> axis_tiles(int64_t dim, int64_t align, std::span<const int64_t> factors) {
  std::vector<AxisTile> tiles;
  for (int64_t l0 : l0_sizes(dim, align))
    for (int64_t l1 : l1_sizes(l0, dim, align, factors)) tiles.push_back({l0, l1});
  for (int64_t l1 : balanced_sizes(dim, align))
    for (int64_t f : factors)
      if (l1 % f == 0 && (l1 / f) % align == 0) tiles.push_back({l1 / f, l1});
  std::sort(tiles.begin(), tiles.end());
  tiles.erase(std::unique(tiles.begin(), tiles.end()), tiles.end());
  return tiles;
}

CubeAxes cube_axes(const MatmulExtents& e) {
  return {axis_tiles(e.m, e.align, kMnL1Factors), axis_tiles(e.n, e.align, kMnL1Factors),
          axis_tiles(e.k, e.align, kKL1Factors), align_up(e.k, e.align)};
}

std::vector<KTile> k_tiles(const AxisTile& k, int64_t whole_k) {
  std::vector<KTile> forms = {{k.l0, k.l1, k.l1}};
  const int64_t resident = align_up(whole_k, k.l1);  // a multiple of kL1, as kAL1/kBL1 need
  if (resident == k.l1) return forms;
  forms.push_back({k.l0, resident, k.l1});  // A resident in L1
  forms.push_back({k.l0, k.l1, resident});  // B resident in L1
  return forms;
}

CubeTile cube_tile(const AxisTile& m, const KTile& k, const AxisTile& n) {
  CubeTile t;
  t.mL0 = m.l0, t.mL1 = m.l1, t.nL0 = n.l0, t.nL1 = n.l1;
  t.kL0 = k.l0, t.kAL1 = k.a_l1, t.kBL1 = k.b_l1;
  t.k_short_form = k.a_l1 == k.b_l1;
  return t;
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

std::optional<AttentionExtents> attention_extents(const TensorGraph& graph) {
  for (const Node& n : graph.nodes()) {
    if (n.kind != OpKind::FlashAttention) continue;
    const Shape& q = graph.node(n.inputs[0]).shape;
    const Shape& k = graph.node(n.inputs[1]).shape;
    return AttentionExtents{q[1] / k[1] * q[2], k[2], q[3], q[0] * k[1], n.causal};
  }
  return std::nullopt;
}

// The smallest KV split (2..16) whose tasks fill whole waves of the clusters, where the
// unsplit tasks leave the last wave part-empty (64 decode tasks on 24 clusters: 3); 1
// when they already fill it, when they run in more than 8 waves (the empty part is then
// under an eighth of the time, less than a split's combine costs), or when no split up
// to 16 fills it.
namespace {
int64_t wave_balancing_split(int64_t tasks, int64_t clusters) {
  if (tasks % clusters == 0 || tasks > 8 * clusters) return 1;
  for (int64_t sp = 2; sp <= 16; ++sp)
    if (tasks * sp % clusters == 0) return sp;
  return 1;
}
}  // namespace

// pto-isa flash_atten's qkPreloadNum (its README's default): QK four KV blocks ahead of PV.
constexpr int kDeepPreload = 4;

std::vector<AttentionTiles> attention_tile_candidates(const AttentionExtents& e, int clusters) {
  std::vector<int64_t> q_tiles, kv_tiles, splits = {1};
  for (int64_t q : {16, 32, 64, 96, 128, 192, 256})
    if (q < e.rows) q_tiles.push_back(q);
  if (e.rows <= 256) q_tiles.push_back(e.rows);
  for (int64_t kv = 64; kv <= 1024; kv *= 2)
    if (kv < e.skv) kv_tiles.push_back(kv);
  if (e.skv <= 1024) kv_tiles.push_back(e.skv);
  const std::vector<TaskOrder> orders = e.causal ? std::vector<TaskOrder>{TaskOrder::Bhq, TaskOrder::Qbh, TaskOrder::HeavyFirst}
                                                 : std::vector<TaskOrder>{TaskOrder::Bhq, TaskOrder::Qbh};
  std::vector<AttentionTiles> out;
  for (int64_t q : q_tiles) {
    const int64_t tasks = e.heads * ceil_div(e.rows, q);
    std::vector<int64_t> qs_splits = {1};
    for (int64_t sp = 2; sp <= 16 && tasks < 2 * clusters; sp *= 2) qs_splits.push_back(sp);
    if (const int64_t sp = wave_balancing_split(tasks, clusters); sp > 1 &&
        std::find(qs_splits.begin(), qs_splits.end(), sp) == qs_splits.end())
      qs_splits.push_back(sp);
    for (int64_t kv : kv_tiles)
      for (int64_t sp : qs_splits)
        for (TaskOrder o : orders)
          if (sp == 1 || sp < ceil_div(e.skv, kv))
            for (std::optional<int> preload : {std::optional<int>{}, std::optional<int>{kDeepPreload}})
              out.push_back({q, kv, sp, o, preload});
  }
  return out;
}

std::vector<std::map<std::string, StageTiles>> attention_stage_candidates(const AttentionExtents& e) {
  auto upto = [](std::initializer_list<int64_t> sizes, int64_t cap) {
    std::vector<int64_t> out;
    for (int64_t v : sizes)
      if (v < cap || out.empty()) out.push_back(v);
    return out;
  };
  const int64_t rows = std::min<int64_t>(e.rows, 256), kv = std::min<int64_t>(e.skv, 1024);
  auto cube = [](int64_t m, int64_t k, int64_t n) {
    CubeTile c;
    c.mL0 = c.mL1 = m;
    c.kL0 = c.kAL1 = c.kBL1 = k;
    c.nL0 = c.nL1 = n;
    c.k_short_form = true;
    return c;
  };
  std::vector<std::map<std::string, StageTiles>> out;
  for (int64_t m : upto({32, 64, 128}, align_up(rows, 16)))
    for (int64_t k1 : upto({64, 128}, align_up(e.dim, 16)))
      for (int64_t n1 : upto({64, 128, 256}, align_up(kv, 16)))
        for (int64_t k2 : upto({64, 128, 256}, align_up(kv, 16)))
          for (int64_t n2 : upto({64, 128}, align_up(e.dim, 16)))
            for (int64_t v1 : upto({8, 16, 32, 64}, rows))
              for (int64_t v2 : upto({8, 16, 32, 64}, rows)) {
                std::map<std::string, StageTiles> s;
                s["c1"].cube = cube(m, k1, n1);
                s["c2"].cube = cube(m, k2, n2);
                s["v1"].vec = Shape{v1, kv};
                s["v2"].vec = Shape{v2, e.dim};
                out.push_back(std::move(s));
              }
  return out;
}

std::vector<std::pair<int64_t, int64_t>> l2_group_candidates(int cores) {
  std::vector<std::pair<int64_t, int64_t>> groups;
  for (int64_t m = 1; m <= cores; ++m)
    if (cores % m == 0) groups.emplace_back(m, cores / m);
  return groups;
}

}  // namespace pto::search
