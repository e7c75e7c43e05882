// Pass 3, a Combine kernel (see combine_kernel.h).
#include "core/passes/combine_kernel.h"

#include "core/error.h"
#include "core/passes/gm_tensors.h"
#include "core/passes/resolve_config.h"
#include "core/passes/ub_allocation.h"
#include "core/passes/vector_body.h"

namespace pto::passes {
namespace {

// Halves the tile's rows, then its columns (in whole 32-byte runs of fp32), while the
// task's buffers overflow UB; what cannot shrink further is left to the UB rule.
void narrow_into_ub(const VectorBody& body, const Target& target, Shape& tile, VecTiling& vec) {
  const size_t r = tile.size();
  for (;;) {
    allocate_ub(body, tile, 1, target.align_bytes, vec);
    if (vec.ub_bytes <= target.ub) return;
    if (r >= 2 && tile[r - 2] > 1) {
      tile[r - 2] = ceil_div(tile[r - 2], 2);
    } else if (tile[r - 1] > 8) {
      tile[r - 1] = align_up(ceil_div(tile[r - 1], 2), 8);
    } else {
      return;
    }
  }
}

}  // namespace

TiledKernel combine_kernel(const TensorGraph& g, const std::vector<int>& program_id, int whole, int after,
                           const Target& target, RuleCheck& check) {
  const GmTensors own = gm_tensors(g);
  BodyRequest req;
  for (NodeId id : g.compute_nodes()) req.nodes.push_back(id);
  std::vector<bool> stored(g.nodes().size(), false);
  for (NodeId out : g.outputs()) stored[out] = true;
  req.stored = &stored;
  std::string why;
  std::optional<VectorBody> body = build_vector_body(g, own.tensors, req, why);
  if (!body) internal_error("a combine kernel: " + why);
  for (GmAccess& a : body->loads) a.tensor = program_id[a.tensor];
  for (GmAccess& a : body->stores) a.tensor = program_id[a.tensor];

  TiledKernel k;
  k.kind = KernelKind::Combine;
  k.after = {after};
  k.own_body = std::make_shared<const VectorBody>(std::move(*body));
  k.body = k.own_body.get();
  Shape tile = internal_vec(k.body->iteration);
  tile[whole] = k.body->iteration[whole];
  narrow_into_ub(*k.body, target, tile, k.vec);
  k.vec.tile = tile;
  k.vec.dims.resize(tile.size());
  for (size_t d = 0; d < tile.size(); ++d) k.vec.dims[d] = split_dim(k.body->iteration[d], tile[d]);
  k.footprint[static_cast<int>(MemLevel::UB)] = k.vec.ub_bytes;
  check.vector(g, *k.body, tile, k.vec, "");
  return k;
}

}  // namespace pto::passes
