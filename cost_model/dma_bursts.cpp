#include "cost_model/dma_bursts.h"

#include <algorithm>
#include <unordered_set>

namespace pto {
namespace {

double bytes_of(const KernelSummary& k, int tensor) {
  for (const TensorRead& r : k.reads)
    if (r.tensor == tensor) return r.bytes;
  return 0;
}

// One contiguous run of a [tile_rows, tile_cols] window of `tensor`: a row cut at the
// tensor's last dim, or all the rows when the window spans whole rows (they follow one
// another in GM, and the DMA moves them as one run).
double run_bytes(int64_t tile_rows, int64_t tile_cols, const Node& tensor) {
  const Shape& shape = tensor.shape;
  const int64_t last = shape.empty() ? 1 : shape.back();
  int64_t elems = std::max<int64_t>(std::min(tile_cols, last), 1);
  if (tile_cols >= last && shape.size() >= 2) elems *= std::max<int64_t>(std::min(tile_rows, shape[shape.size() - 2]), 1);
  return static_cast<double>(elems * dtype_size(tensor.dtype));
}

BurstFactors cube_factors(const KernelSummary& k, const TensorGraph& g, const CubeTile& ct, double burst) {
  const Node* mm = nullptr;
  for (NodeId n : k.nodes)
    if (g.node(n).kind == OpKind::Matmul) mm = &g.node(n);
  if (!mm) return {};
  const Node& a = g.node(mm->inputs[0]);
  const Node& b = g.node(mm->inputs[1]);
  const double fa = burst_factor(mm->transpose_a ? run_bytes(ct.kAL1, ct.mL1, a) : run_bytes(ct.mL1, ct.kAL1, a), burst);
  const double fb = burst_factor(mm->transpose_b ? run_bytes(ct.nL1, ct.kBL1, b) : run_bytes(ct.kBL1, ct.nL1, b), burst);
  const Node& out = g.node(k.nodes.back());
  BurstFactors f;
  f.write = burst_factor(run_bytes(ct.mL1, ct.nL1, out), burst);
  const double bytes_a = bytes_of(k, k.cube_a), bytes_b = bytes_of(k, k.cube_b);
  double total = 0;
  for (const TensorRead& r : k.reads) total += r.bytes;
  if (total > 0) f.read = (total - bytes_a - bytes_b + fa * bytes_a + fb * bytes_b) / total;
  return f;
}

BurstFactors vector_factors(const KernelSummary& k, const TensorGraph& g, double burst) {
  if (k.tile.empty() || k.iteration.empty()) return {};
  const int64_t rows = k.tile.size() >= 2 ? k.tile[k.tile.size() - 2] : 1, cols = k.tile.back();
  const std::unordered_set<NodeId> inside(k.nodes.begin(), k.nodes.end());
  double weighted = 0, weight = 0;  // over the kernel's GM inputs, by their bytes
  for (NodeId n : k.nodes) {
    for (NodeId in : g.node(n).inputs) {
      if (inside.count(in)) continue;
      const Node& src = g.node(in);
      const auto bytes = static_cast<double>(num_elements(src.shape) * dtype_size(src.dtype));
      weighted += bytes * burst_factor(run_bytes(rows, cols, src), burst);
      weight += bytes;
    }
  }
  // The largest node of the kernel stands for its stores (a row statistic it also
  // stores is a few bytes beside it).
  const Node* out = &g.node(k.nodes.front());
  for (NodeId n : k.nodes)
    if (num_elements(g.node(n).shape) > num_elements(out->shape)) out = &g.node(n);
  BurstFactors f;
  if (weight > 0) f.read = weighted / weight;
  f.write = burst_factor(run_bytes(rows, cols, *out), burst);
  return f;
}

}  // namespace

double burst_factor(double run_bytes, double burst_bytes) {
  return run_bytes > 0 && burst_bytes > run_bytes ? burst_bytes / run_bytes : 1;
}

BurstFactors burst_factors(const KernelSummary& k, const TensorGraph& graph, const TileConfig& config,
                           const Target& target) {
  const double burst = static_cast<double>(target.gm_min_burst_bytes);
  if (burst <= 0 || k.nodes.empty()) return {};
  BurstFactors f;
  if (k.uses_cube) {
    if (config.cube) f = cube_factors(k, graph, *config.cube, burst);
  } else {
    f = vector_factors(k, graph, burst);
  }
  f.read_miss = std::max(1.0, f.read * target.gm_read_bpc / target.l2_read_bpc);
  return f;
}

}  // namespace pto
