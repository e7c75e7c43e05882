// Pass 3, tile expansion with memory-level assignment (see tile_expansion.h).
#include "core/passes/tile_expansion.h"

#include <algorithm>
#include <functional>

#include "core/passes/attention_tiling.h"
#include "core/passes/combine_kernel.h"
#include "core/passes/cube_layout.h"
#include "core/passes/resolve_config.h"
#include "core/passes/stream_plan.h"
#include "core/passes/tile_rules.h"
#include "core/passes/ub_allocation.h"

namespace pto::passes {
namespace {

constexpr int level(MemLevel l) { return static_cast<int>(l); }

CubeTiling cube_tiling(const CubeSpec& s, const CubeTile& c) {
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
  // PyPTO's enable_split_k cuts K into ceil(K / kL1) parts, one K step each
  // (docs/zh/tutorials/debug/matmul_performance_guide.md, 自动构图方式: "默认采用kL1对K轴进行切分");
  // the guide's manual K loop (手动构图方式) into views of k_view, whole K steps each.
  if (c.split_k) ct.chunk_steps = 1;
  else if (c.k_view > 0) ct.chunk_steps = std::max<int64_t>(1, c.k_view / ct.k_step);
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

// The UB buffers of `tile` at n-buffer depth `nbuffer`.
void allocate_vector(const VectorBody& body, const Shape& tile, int nbuffer, const Target& t, TiledKernel& k) {
  k.vec.tile = tile;
  if (k.vec.stream) {
    allocate_stream_ub(body, tile, nbuffer, t.align_bytes, k.vec);
  } else {
    allocate_ub(body, tile, nbuffer, t.align_bytes, k.vec);
  }
}

// PyPTO has no buffer-depth setter: its compiler double-buffers the copies in when
// space allows (docs/zh/tutorials/debug/matmul_performance_guide.md: "MTE2、MTE1搬运均可以开启
// double buffer" where the tiles leave room). So a config without nbuffer gets two slots
// where they fit and one otherwise; a config's own nbuffer (a pto-tune override) is
// taken as given and checked.
// `most` caps the automatic depth (a Cube kernel's epilogue takes no more than its L1).
int depth_that_fits(const std::optional<int>& given, const std::function<bool(int)>& fits, int most = 2) {
  if (given) return *given;
  return most >= 2 && fits(2) ? 2 : 1;
}

void lay_out_vector(const TensorGraph& g, const VectorBody& body, const Shape& tile, const ResolvedConfig& rc,
                    const Target& t, RuleCheck& check, TiledKernel& k, const std::string& unstreamable = "",
                    int most_slots = 2) {
  k.nbuffer = depth_that_fits(rc.nbuffer, [&](int n) {
    allocate_vector(body, tile, n, t, k);
    return k.vec.ub_bytes <= t.ub;
  }, most_slots);
  allocate_vector(body, tile, k.nbuffer, t, k);
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
  lay_out_vector(g, *k.body, tile, rc, t, check, k, unstreamable);
}

// An operand's L1 slots at depth n: no more than the loads of it a task makes.
void set_cube_slots(CubeTiling& ct, int n, int l0_slots) {
  ct.a_slots = static_cast<int>(std::min<int64_t>(n, ceil_div(ct.chunk_steps, ct.ra)));
  ct.b_slots = static_cast<int>(std::min<int64_t>(n, ceil_div(ct.chunk_steps, ct.rb)));
  ct.l0_slots = l0_slots;
}

int64_t cube_l1_bytes(const CubeTiling& ct) { return ct.a_slots * ct.a_l1 + ct.b_slots * ct.b_l1; }

void tile_cube_kernel(const TensorGraph& g, const KernelSpec& spec, const ResolvedConfig& rc, const Target& t,
                      RuleCheck& check, TiledKernel& k) {
  const CubeSpec& s = *spec.cube;
  k.cube = cube_tiling(s, rc.cube);
  CubeTiling& ct = k.cube;
  const int l0_slots = depth_that_fits(rc.nbuffer, [&](int n) { return n * ct.a_l0 <= t.l0a && n * ct.b_l0 <= t.l0b; });
  k.nbuffer = depth_that_fits(rc.nbuffer, [&](int n) {
    set_cube_slots(ct, n, l0_slots);
    return cube_l1_bytes(ct) <= t.l1;
  });
  set_cube_slots(ct, k.nbuffer, l0_slots);
  check.cube(s, rc.cube, ct, !spec.body.empty());
  k.footprint[level(MemLevel::L1)] = cube_l1_bytes(ct);
  k.footprint[level(MemLevel::L0A)] = ct.l0_slots * ct.a_l0;
  k.footprint[level(MemLevel::L0B)] = ct.l0_slots * ct.b_l0;
  k.footprint[level(MemLevel::L0C)] = ct.c_l0;
  if (spec.body.empty()) return;
  // The epilogue's tasks cover the vec sub-tiles of one Cube tile.
  Shape tile = vector_tile(rc, spec.body, false, check);
  const size_t r = tile.size();
  tile[r - 2] = std::min(tile[r - 2], ct.mL1);
  tile[r - 1] = std::min(tile[r - 1], ct.nL1);
  for (size_t d = 0; d + 2 < r; ++d) tile[d] = 1;
  const int cube_depth = k.nbuffer;
  lay_out_vector(g, spec.body, tile, rc, t, check, k, "", cube_depth);
  // One depth per kernel: the epilogue's UB may allow fewer slots than L1.
  if (k.nbuffer < cube_depth) set_cube_slots(ct, k.nbuffer, l0_slots);
  k.footprint[level(MemLevel::L1)] = cube_l1_bytes(ct);
}

// flash_attention: its tiling, and with a split the kernel that combines the partials.
void tile_attention_kernel(const Partition& p, const KernelSpec& spec, const ResolvedConfig& rc, const Target& t,
                           RuleCheck& check, TiledKernel& k, TilePlan& plan) {
  k.attention = tile_attention(*spec.attention, rc, t, check);
  k.nbuffer = k.attention->nbuffer;
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

// fp32 split-K as PyPTO builds it (matmul_performance_guide.md, 自动构图方式: each part's
// sum "搬出" then all parts added; int32 adds atomically, the Zero kernel's way): chunk c
// stores its [M, N] sums at rows c*M.. of a partials tensor [batch..., chunks*M, N],
// and a Combine kernel sums its view [batch..., chunks, M, N] over the chunks into the
// output. `k` (the Cube kernel) goes into the plan; `k` becomes the Combine kernel.
void add_split_k_partials(const Partition& p, const KernelSpec& spec, const Target& t, RuleCheck& check,
                          TiledKernel& k, TilePlan& plan) {
  const CubeSpec& s = *spec.cube;
  const int64_t chunks = k.cube.chunks;
  const int first = static_cast<int>(p.tensors.size() + plan.extra_tensors.size());
  GmTensor partials = p.tensors[s.c];
  partials.id = first;
  partials.name += ".partials";
  partials.node = -1;
  partials.role = TensorRole::Intermediate;
  partials.io_index = -1;
  partials.alias_of = -1;
  partials.elem_offset = 0;
  partials.shape = s.batch;
  partials.shape.push_back(chunks * s.m);
  partials.shape.push_back(s.n);
  partials.strides = contiguous_strides(partials.shape);
  GmTensor by_chunk = partials;
  by_chunk.id = first + 1;
  by_chunk.name += ".by_chunk";
  by_chunk.alias_of = partials.id;
  by_chunk.shape = s.batch;
  for (int64_t d : {chunks, s.m, s.n}) by_chunk.shape.push_back(d);
  by_chunk.strides = contiguous_strides(by_chunk.shape);
  plan.extra_tensors.push_back(partials);
  plan.extra_tensors.push_back(by_chunk);
  k.cube.partials = partials.id;

  const int chunk_dim = static_cast<int>(s.batch.size());
  GraphBuilder b;
  const NodeId in = b.input("partials", by_chunk.shape, DType::F32);
  b.mark_output(b.sum(in, chunk_dim, false, "sum"));
  const int self = static_cast<int>(plan.kernels.size());
  plan.kernels.push_back(std::move(k));
  TiledKernel combine = combine_kernel(b.build(), {by_chunk.id, s.c}, chunk_dim, self, t, check);
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
      if (k.cube.chunks > 1 && spec.cube->out == DType::F32) {
        add_split_k_partials(p, spec, t, check, k, plan);
      } else if (k.cube.chunks > 1) {
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
