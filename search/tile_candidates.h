// Tile candidates: the sizes a tile-shape search tries on each axis of a TileConfig, in
// PyPTO's vocabulary, derived from the graph's extents alone.
//
// The Cube lists hold every aligned size that is not dominated: on M, N and K the L1
// sizes are, for each tile count, the smallest aligned size making that many tiles
// (balanced_sizes: the wave-balanced 96, 160, 224 of hand-written kernels), with L0 =
// L1 / {1, 2, 4} on M and N and kL0 = kL1 / {1..4} where aligned; and, as the PyPTO
// matmul guide and CATLASS write them, L0 = the fractal alignment times powers of two
// or the whole (aligned) dim with L1 = L0 x those factors. kAL1 or kBL1 may also hold
// the whole K (an operand resident in L1, the guide's decode example). What this can
// miss: an aligned size larger than the balanced one of its tile count that is no
// power of two (it pads more for the same tiles, but could divide into an L0 the
// balanced one cannot), and L0 / L1 ratios other than those factors.
// Vector tiles take powers of two and the whole dim per axis, reduced dims
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
// For each tile count c, the smallest aligned size that cuts `dim` into c tiles,
// align_up(ceil(dim / c), align), ascending and distinct. Every other aligned size is
// dominated by one of these: it makes as many tiles with more padding (on 5120 with 24
// cores, 224 makes the 23 tiles of one wave; 240 and 208 make 22 and 25 tiles).
std::vector<int64_t> balanced_sizes(int64_t dim, int64_t align);

// One axis's L0 and L1 sizes.
struct AxisTile {
  int64_t l0 = 0, l1 = 0;
  auto operator<=>(const AxisTile&) const = default;
};
// The (L0, L1) pairs of one axis, ascending and distinct: L0 from l0_sizes with L1 =
// L0 x factor (the guide's powers of two), and L1 from balanced_sizes with L0 = L1 /
// factor where that stays aligned (the wave-balanced tiles experts pick).
std::vector<AxisTile> axis_tiles(int64_t dim, int64_t align, std::span<const int64_t> factors);

// The K forms of one K axis tile: kAL1 = kBL1 = kL1, and, where the whole K (rounded up
// to a multiple of kL1) is larger, A or B resident in L1 with that much K.
struct KTile {
  int64_t l0 = 0, a_l1 = 0, b_l1 = 0;
};
std::vector<KTile> k_tiles(const AxisTile& k, int64_t whole_k);

// The three Cube axes of a matmul: M and N with L1 = L0 x {1, 2, 4}, K with kL1 = kL0 x
// {1..4}, and the aligned whole K the resident forms hold.
struct CubeAxes {
  std::vector<AxisTile> m, n, k;
  int64_t whole_k = 0;
};
CubeAxes cube_axes(const MatmulExtents& e);
CubeTile cube_tile(const AxisTile& m, const KTile& k, const AxisTile& n);

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
