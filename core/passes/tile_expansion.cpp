// Pass 3, tile expansion with memory-level assignment (see tile_expansion.h).
#include "core/passes/tile_expansion.h"

#include <algorithm>

#include "core/passes/attention_tiling.h"
#include "core/passes/cube_layout.h"
#include "core/passes/resolve_config.h"
#include "core/passes/stream_plan.h"
#include "core/passes/tile_rules.h"
#include "core/passes/ub_allocation.h"

namespace pto::passes {
namespace {

constexpr int level(MemLevel l) { return static_cast<int>(l); }

CubeTiling cube_tiling(const CubeSpec& s, const CubeTile& c, bool split_k, const Target& t) {
  CubeTiling ct;
  const int64_t a = cube_align(s.in);
  const int64_t m_cap = align_up(s.m, a), n_cap = align_up(s.n, a), k_cap = align_up(s.k, a);
  ct.mL1 = std::min(c.mL1, m_cap);
  ct.mL0 = std::min(c.mL0, ct.mL1);
  ct.nL1 = std::min(c.nL1, n_cap);
  ct.nL0 = std::min(c.nL0, ct.nL1);
  const int64_t step = std::min(c.kAL1, c.kBL1);
  const bool multiples = std::max(c.kAL1, c.kBL1) % step == 0;
  ct.ra = multiples ? c.kAL1 / step : 1;
  ct.rb = multiples ? c.kBL1 / step : 1;
  ct.k_step = std::min(step, k_cap);
  ct.kAL1 = multiples ? std::min(c.kAL1, k_cap) : ct.k_step;
  ct.kBL1 = multiples ? std::min(c.kBL1, k_cap) : ct.k_step;
  ct.kL0 = std::min(c.kL0, ct.k_step);
  ct.steps = ceil_div(s.k, ct.k_step);
  ct.batch = num_elements(s.batch);
  ct.m = split_dim(s.m, ct.mL1);
  ct.n = split_dim(s.n, ct.nL1);
  ct.chunk_steps = ct.steps;
  if (split_k) {
    const int64_t tiles = ct.batch * ct.m.count * ct.n.count;
    const int64_t wanted = std::clamp<int64_t>(ceil_div(t.aic_cores, tiles), 1, ct.steps);
    ct.chunk_steps = ceil_div(ct.steps, wanted);
  }
  ct.chunks = ceil_div(ct.steps, ct.chunk_steps);
  ct.a_l1 = cube_buffer_bytes(ct.mL1, ct.kAL1, s.in);
  ct.b_l1 = cube_buffer_bytes(ct.kBL1, ct.nL1, s.in);
  ct.a_l0 = cube_buffer_bytes(ct.mL0, ct.kL0, s.in);
  ct.b_l0 = cube_buffer_bytes(ct.kL0, ct.nL0, s.in);
  ct.c_l0 = cube_buffer_bytes(ct.mL1, ct.nL1, s.acc);
  return ct;
}

// The config's vec for this iteration space: its last `rank` sizes (rank rule), or the
// fallback, clamped to the dims.
Shape vector_tile(const ResolvedConfig& rc, const VectorBody& body, bool internal, RuleCheck& check) {
  const Shape& it = body.iteration;
  const size_t rank = it.size();
  Shape tile;
  if (internal) {
    tile = internal_vec(it);
  } else if (!rc.vec) {
    tile = fallback_vec(it, body.reduce_dims);
  } else {
    const Shape& v = *rc.vec;
    check.vec_rank(v, it);
    tile.assign(rank, 1);
    for (size_t i = 0; i < std::min(rank, v.size()); ++i) tile[rank - 1 - i] = v[v.size() - 1 - i];
  }
  for (size_t d = 0; d < rank; ++d) tile[d] = std::min(tile[d], it[d]);
  return tile;
}

void lay_out_vector(const TensorGraph& g, const VectorBody& body, const Shape& tile, int nbuffer, const Target& t,
                    RuleCheck& check, TiledKernel& k, const std::string& unstreamable = "") {
  k.vec.tile = tile;
  if (k.vec.stream) {
    allocate_stream_ub(body, tile, nbuffer, t.align_bytes, k.vec);
  } else {
    allocate_ub(body, tile, nbuffer, t.align_bytes, k.vec);
  }
  k.footprint[level(MemLevel::UB)] = k.vec.ub_bytes;
  check.vector(g, body, tile, k.vec, unstreamable);
}

// The first dim some reduction runs over that the tile cuts, or -1.
int cut_reduction_dim(const VectorBody& body, const Shape& tile) {
  for (int d : body.reduce_dims)
    if (tile[d] < body.iteration[d]) return d;
  return -1;
}

// A vector kernel whose tile cuts its reduced dim streams it (stream_plan.h): a task
// covers that dim whole, in chunks of the tile's width.
void tile_vector_kernel(const TensorGraph& g, const ResolvedConfig& rc, const Target& t, RuleCheck& check,
                        TiledKernel& k) {
  const Shape tile = vector_tile(rc, *k.body, k.kind != KernelKind::Vector, check);
  k.vec.dims.resize(tile.size());
  for (size_t d = 0; d < tile.size(); ++d) k.vec.dims[d] = split_dim(k.body->iteration[d], tile[d]);
  const int cut = cut_reduction_dim(*k.body, tile);
  std::string unstreamable;
  if (cut >= 0 && k.kind == KernelKind::Vector) {
    k.vec.stream = plan_stream(*k.body, cut, rc.reduce_form, unstreamable);
    if (k.vec.stream) {
      k.vec.chunks = k.vec.dims[cut];
      k.vec.dims[cut] = split_dim(k.body->iteration[cut], k.body->iteration[cut]);
    }
  }
  lay_out_vector(g, *k.body, tile, rc.nbuffer, t, check, k, unstreamable);
}

void tile_cube_kernel(const TensorGraph& g, const KernelSpec& spec, const ResolvedConfig& rc, const Target& t,
                      RuleCheck& check, TiledKernel& k) {
  const CubeSpec& s = *spec.cube;
  k.cube = cube_tiling(s, rc.cube, rc.cube.split_k, t);
  const CubeTiling& ct = k.cube;
  check.cube(s, rc.cube, ct, rc.nbuffer, !spec.body.empty(), rc.cube.split_k);
  k.footprint[level(MemLevel::L1)] = rc.nbuffer * (ct.a_l1 + ct.b_l1);
  k.footprint[level(MemLevel::L0A)] = rc.nbuffer * ct.a_l0;
  k.footprint[level(MemLevel::L0B)] = rc.nbuffer * ct.b_l0;
  k.footprint[level(MemLevel::L0C)] = ct.c_l0;
  if (spec.body.empty()) return;
  // The epilogue's tasks cover the vec sub-tiles of one Cube tile.
  Shape tile = vector_tile(rc, spec.body, false, check);
  const size_t r = tile.size();
  tile[r - 2] = std::min(tile[r - 2], ct.mL1);
  tile[r - 1] = std::min(tile[r - 1], ct.nL1);
  for (size_t d = 0; d + 2 < r; ++d) tile[d] = 1;
  lay_out_vector(g, spec.body, tile, rc.nbuffer, t, check, k);
}

// flash_attention: its tiling, and with a split the kernel that combines the partials.
void tile_attention_kernel(const Partition& p, const KernelSpec& spec, const ResolvedConfig& rc, const Target& t,
                           RuleCheck& check, TiledKernel& k, TilePlan& plan) {
  k.attention = tile_attention(*spec.attention, rc, t, check);
  for (const ClusterBuffer& b : k.attention->buffers) {
    int64_t& peak = k.footprint[level(b.level)];
    peak = std::max(peak, b.offset + b.bytes);
  }
  if (k.attention->splits == 1) return;
  const int self = static_cast<int>(plan.kernels.size());
  plan.kernels.push_back(std::move(k));
  TiledKernel combine = split_combine_kernel(*spec.attention, *plan.kernels.back().attention, self, p.tensors.size(),
                                             p.tensors, plan, t, check);
  combine.spec = plan.kernels.back().spec;
  k = std::move(combine);
}

}  // namespace

TilePlan expand_tiles(const TensorGraph& g, const Partition& p, const ResolvedConfig& rc, const Target& t) {
  TilePlan plan;
  plan.kernels.reserve(2 * p.kernels.size());
  RuleCheck check(t, plan);
  std::vector<int> tiled_index(p.kernels.size(), -1);
  for (size_t i = 0; i < p.kernels.size(); ++i) {
    const KernelSpec& spec = p.kernels[i];
    check.set_kernel(p.kernels.size() > 1 ? &spec.name : nullptr);
    TiledKernel k;
    k.spec = static_cast<int>(i);
    k.kind = spec.kind;
    k.body = &spec.body;
    for (int a : spec.after) k.after.push_back(tiled_index[a]);
    if (spec.attention) {
      tile_attention_kernel(p, spec, rc, t, check, k, plan);
    } else if (spec.cube) {
      tile_cube_kernel(g, spec, rc, t, check, k);
      if (k.cube.chunks > 1) {
        TiledKernel zero;
        zero.spec = k.spec;
        zero.kind = KernelKind::Zero;
        zero.body = &spec.zero_body;
        tile_vector_kernel(g, rc, t, check, zero);
        k.after.push_back(static_cast<int>(plan.kernels.size()));
        plan.kernels.push_back(std::move(zero));
      }
    } else {
      tile_vector_kernel(g, rc, t, check, k);
    }
    tiled_index[i] = static_cast<int>(plan.kernels.size());
    plan.kernels.push_back(std::move(k));
  }
  return plan;
}

}  // namespace pto::passes
