// Pass 1, validate: fills the parts a config leaves out (see resolve_config.h).
#include "core/passes/resolve_config.h"

#include <algorithm>

#include "core/error.h"

namespace pto::passes {
namespace {

// Parsed configs are already checked; these catch configs built in code.
void check_positive(int64_t v, const std::string& field) {
  if (v <= 0) usage_error("config " + field + "=" + std::to_string(v) + " must be positive");
}

void check_cube(const CubeTile& c) {
  const std::pair<const char*, int64_t> fields[] = {{"mL0", c.mL0}, {"mL1", c.mL1}, {"kL0", c.kL0},
                                                    {"kAL1", c.kAL1}, {"kBL1", c.kBL1}, {"nL0", c.nL0},
                                                    {"nL1", c.nL1}};
  for (const auto& [name, v] : fields) check_positive(v, std::string("cube.") + name);
}

// min(dim, [.., 1, rows, cols]) over the iteration space.
Shape trailing_tile(const Shape& iteration, int64_t rows, int64_t cols) {
  Shape tile(iteration.size(), 1);
  const size_t r = iteration.size();
  if (r >= 1) tile[r - 1] = std::min(iteration[r - 1], cols);
  if (r >= 2) tile[r - 2] = std::min(iteration[r - 2], rows);
  return tile;
}

}  // namespace

CubeTile fallback_cube() {
  CubeTile c;
  c.mL0 = c.mL1 = 128;
  c.kL0 = 64;
  c.kAL1 = c.kBL1 = 256;
  c.k_short_form = true;
  c.nL0 = c.nL1 = 256;
  return c;
}

Shape fallback_vec(const Shape& iteration, const std::vector<int>& reduce_dims) {
  Shape tile = trailing_tile(iteration, 64, 512);
  for (int d : reduce_dims) tile[d] = iteration[d];
  return tile;
}

Shape internal_vec(const Shape& iteration) { return trailing_tile(iteration, 16, 512); }

ResolvedConfig resolve_config(const TensorGraph& g, const TileConfig& config) {
  if (config.vec)
    for (size_t d = 0; d < config.vec->size(); ++d) check_positive((*config.vec)[d], "vec[" + std::to_string(d) + "]");
  if (config.cube) check_cube(*config.cube);
  if (config.nbuffer && (*config.nbuffer < 1 || *config.nbuffer > 4))
    usage_error("config nbuffer=" + std::to_string(*config.nbuffer) + " must be 1..4");
  if (config.attention && config.attention->preload &&
      (*config.attention->preload < 0 || *config.attention->preload > kMaxAttentionPreload))
    usage_error("config attention.preload=" + std::to_string(*config.attention->preload) + " must be 0.." +
                std::to_string(kMaxAttentionPreload));
  if (config.l2_group) {
    check_positive(config.l2_group->first, "l2_group[0]");
    check_positive(config.l2_group->second, "l2_group[1]");
  }
  const bool has_matmul = std::any_of(g.nodes().begin(), g.nodes().end(),
                                      [](const Node& n) { return n.kind == OpKind::Matmul; });
  ResolvedConfig r;
  r.vec = config.vec;
  r.cube = config.cube && has_matmul ? *config.cube : fallback_cube();
  r.reduce_form = config.reduce.value_or(ReduceForm::Online);
  r.attention = config.attention;
  r.stages = config.stages;
  r.nbuffer = config.nbuffer;
  r.l2_group = config.l2_group;
  r.fusion = config.fusion;
  return r;
}

}  // namespace pto::passes
