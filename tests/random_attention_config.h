// A random flash_attention config: the loop's blocks (often ragged against the shape),
// the KV split and task order, each stage's tiles, the n-buffer depth and the QK preload
// (often its default, else one from none to the Cube-vector FIFOs' deepest), some rules
// broken on purpose (v1 narrower than the KV block, v2 than the head dim), so that a
// caller that keeps only feasible draws still sees the rules at work.
#pragma once

#include <cstdint>
#include <initializer_list>

#include "core/tile_config.h"
#include "core/workload.h"

namespace pto::testing {

template <class Rng>
int64_t pick_one(Rng& rng, std::initializer_list<int64_t> values) {
  return *(values.begin() + static_cast<std::ptrdiff_t>(rng() % values.size()));
}

template <class Rng>
CubeTile random_stage_cube(Rng& rng) {
  CubeTile c;
  c.mL0 = c.mL1 = 16 * pick_one(rng, {1, 2, 4, 8});
  c.kL0 = c.kAL1 = c.kBL1 = 16 * pick_one(rng, {1, 2, 4});
  c.nL0 = c.nL1 = 16 * pick_one(rng, {1, 2, 4, 8});
  return c;
}

template <class Rng>
TileConfig random_attention_config(Rng& rng, const Workload& w) {
  TileConfig c;
  AttentionTiles a;
  a.q_tile = pick_one(rng, {0, 1, 1}) ? 16 * pick_one(rng, {1, 2, 4, 8}) : w.shape[2];
  a.kv_tile = pick_one(rng, {0, 1, 1}) ? 16 * pick_one(rng, {1, 2, 4, 8, 16}) : w.shape[3];
  a.kv_split = pick_one(rng, {1, 1, 2, 3});
  a.order = static_cast<TaskOrder>(pick_one(rng, {0, 1, 2}));
  c.attention = a;
  c.stages["c1"].cube = random_stage_cube(rng);
  c.stages["c2"].cube = random_stage_cube(rng);
  c.stages["v1"].vec = Shape{16 * pick_one(rng, {1, 2, 4}), a.kv_tile * pick_one(rng, {1, 1, 1, 2}) - pick_one(rng, {0, 0, 0, 8})};
  c.stages["v2"].vec = Shape{8 * pick_one(rng, {1, 2, 4}), w.shape[4] + pick_one(rng, {0, 0, 0, 16, -1})};
  c.nbuffer = static_cast<int>(pick_one(rng, {1, 2, 3}));
  if (pick_one(rng, {0, 1})) c.attention->preload = static_cast<int>(pick_one(rng, {0, 1, 2, 4, kMaxAttentionPreload}));
  return c;
}

}  // namespace pto::testing
