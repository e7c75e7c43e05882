// Tile candidates: the sizes a tile-shape search tries on each axis of a TileConfig, in
// PyPTO's vocabulary, derived from the graph's extents alone.
//
// The lists follow the habits of the PyPTO matmul guide and of CATLASS rather than
// every legal size: Cube L0 sizes are the fractal alignment times powers of two plus
// the whole (aligned) dim; L1 is L0 x {1, 2, 4} on M and N and kL1 = kL0 x {1..4};
// kAL1 or kBL1 may also hold the whole K (an operand resident in L1, the guide's decode
// example). Vector tiles take powers of two and the whole dim per axis, reduced dims
// whole or split into chunks of a power of two from 512 (a split reduction streams the
// row). No list goes past the size that already covers the dim: larger sizes are
// clamped by the compiler to the same tile, so they would only repeat candidates.
// Feasibility is not judged here; the space generator asks core's analyze.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <span>
#include <utility>
#include <vector>

#include "core/shape.h"
#include "core/tensor_graph.h"
#include "core/tile_config.h"

namespace pto::search {

// The largest M, N and K over the graph's matmuls (one CubeTile serves them all, each
// clamped to its own dims) and the coarsest fractal alignment of their inputs.
struct MatmulExtents {
  int64_t m = 0, n = 0, k = 0;
  int64_t align = 16;
};
std::optional<MatmulExtents> matmul_extents(const TensorGraph& graph);

// What the vector tile spans: one entry per dim of the widest iteration space (outermost
// first; kernels of lower rank use the trailing entries), its largest extent over the
// graph's vector work, and whether some reduction runs over it (then a tile that cuts
// it streams it, docs/compiler.md "Split reductions").
struct VecExtents {
  Shape widest;
  std::vector<bool> reduced;
};
std::optional<VecExtents> vec_extents(const TensorGraph& graph);

// align * 2^i below the aligned dim, then the aligned dim itself.
std::vector<int64_t> l0_sizes(int64_t dim, int64_t align);
// l0 * f for each factor (ascending), stopping at the first that covers the aligned dim.
std::vector<int64_t> l1_sizes(int64_t l0, int64_t dim, int64_t align, std::span<const int64_t> factors);

// Every combination of the per-axis lists above; kAL1 = kBL1 = kL1, and besides that
// kAL1 or kBL1 = the whole K (rounded up to a multiple of kL1) when that is larger.
std::vector<CubeTile> cube_tile_candidates(const MatmulExtents& e);

// Powers of two per dim (from 16 on the last dim, where a UB row must stay 32-byte
// aligned; from 512 on a reduced dim) and the whole dim. Tiles of fewer than `min_elements`
// elements are left out unless they are the whole iteration space: below that, the
// vector unit's per-instruction latency dominates whatever the tile saves.
std::vector<Shape> vec_tile_candidates(const VecExtents& e, int64_t min_elements);

// flash_attention's extents: a KV head's stacked query rows, the KV length, the head
// dim, how many (batch, KV head) pairs there are and whether it is causal.
struct AttentionExtents {
  int64_t rows = 0, skv = 0, dim = 0, heads = 0;
  bool causal = false;
};
std::optional<AttentionExtents> attention_extents(const TensorGraph& graph);

// Loop tiles: Q blocks of 16..256 rows (multiples of 16, the whole row count when
// smaller), KV blocks of 64..1024 (powers of two, the PTO kernel's TILE_S1 range, and
// the whole KV when shorter), a KV split (FlashDecoding) of 2..16 where the (head, Q
// block) tasks would not fill the clusters twice, the smallest split that makes them
// whole waves where they are not, the dispatch orders, and the QK preload: nbuffer - 1
// (absent) or pto-isa's kernel's four blocks ahead.
std::vector<AttentionTiles> attention_tile_candidates(const AttentionExtents& e, int clusters);

// Stage tiles (c1, v1, c2, v2): the matmuls' L0 sizes and the vector stages' slice rows,
// over a few sizes each; larger than a block, they would clamp to the same program.
std::vector<std::map<std::string, StageTiles>> attention_stage_candidates(const AttentionExtents& e);

// The L2 groupings [mDim, nDim] whose mDim * nDim is the core count (one wave each).
std::vector<std::pair<int64_t, int64_t>> l2_group_candidates(int cores);

}  // namespace pto::search
