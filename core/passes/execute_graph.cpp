// Pass 6, execute graph (see execute_graph.h).
#include "core/passes/execute_graph.h"

#include <algorithm>

#include "core/error.h"

namespace pto::passes {

std::vector<std::pair<int64_t, int64_t>> cube_tile_order(int64_t m_tiles, int64_t n_tiles,
                                                         const std::optional<std::pair<int64_t, int64_t>>& l2_group) {
  const int64_t gm = l2_group ? l2_group->first : m_tiles;
  const int64_t gn = l2_group ? l2_group->second : n_tiles;
  std::vector<std::pair<int64_t, int64_t>> order;
  order.reserve(m_tiles * n_tiles);
  for (int64_t i0 = 0; i0 < m_tiles; i0 += gm)
    for (int64_t j0 = 0; j0 < n_tiles; j0 += gn)
      for (int64_t i = i0; i < std::min(m_tiles, i0 + gm); ++i)
        for (int64_t j = j0; j < std::min(n_tiles, j0 + gn); ++j) order.emplace_back(i, j);
  return order;
}

void link_execute_graph(const TilePlan& plan, Program& program) {
  for (Kernel& k : program.kernels) {
    k.after = plan.kernels[k.id].after;
    std::vector<int> position(program.tasks.size(), -1);
    for (size_t i = 0; i < k.tasks.size(); ++i) position[k.tasks[i]] = static_cast<int>(i);
    for (size_t i = 0; i < k.tasks.size(); ++i)
      for (int d : program.tasks[k.tasks[i]].deps)
        if (position[d] < 0 || position[d] >= static_cast<int>(i))
          internal_error("kernel \"" + k.name + "\": task " + std::to_string(k.tasks[i]) + " depends on task " +
                         std::to_string(d) + ", which is not dispatched before it in the same kernel");
  }
}

}  // namespace pto::passes
