// Random workloads and tile configs for the cost model's property tests: shapes with
// ragged tails (or exact multiples when a property needs them) and configs drawn from
// the sizes a tuner would try. Callers skip the infeasible ones with analyze().
#pragma once

#include <random>
#include <vector>

#include "core/op_library.h"
#include "core/tile_config.h"
#include "core/workload.h"

namespace pto::testing {

inline int64_t pick(std::mt19937& rng, std::initializer_list<int64_t> values) {
  return *(values.begin() + rng() % values.size());
}

inline Workload matmul_workload(int64_t m, int64_t k, int64_t n, DType dtype = DType::F16) {
  Workload w;
  w.op = "matmul";
  w.shape = {m, k, n};
  w.dtype = dtype;
  return w;
}

inline Workload row_workload(const std::string& op, int64_t rows, int64_t cols,
                             DType dtype = DType::F32) {
  Workload w;
  w.op = op;
  w.shape = {rows, cols};
  w.dtype = dtype;
  return w;
}

// A cube config with L1 = L0 * {1, 2} on M and N and kL1 = kL0 * {1, 2, 4}.
inline TileConfig random_cube_config(std::mt19937& rng) {
  CubeTile c;
  c.mL0 = pick(rng, {16, 32, 64, 128});
  c.mL1 = c.mL0 * pick(rng, {1, 2});
  c.kL0 = pick(rng, {16, 32, 64});
  c.kAL1 = c.kBL1 = c.kL0 * pick(rng, {1, 2, 4});
  c.nL0 = pick(rng, {16, 32, 64, 128});
  c.nL1 = c.nL0 * pick(rng, {1, 2});
  TileConfig t;
  t.cube = c;
  t.nbuffer = static_cast<int>(pick(rng, {1, 2}));
  if (rng() % 2) t.l2_group = std::make_pair(pick(rng, {1, 2, 4}), pick(rng, {1, 2, 4, 6}));
  return t;
}

// A row-wise vector config: whole rows (reductions must not split them), some rows.
inline TileConfig random_row_config(std::mt19937& rng, int64_t cols) {
  TileConfig t;
  t.vec = Shape{pick(rng, {1, 2, 4, 8, 16, 32}), cols};
  t.nbuffer = static_cast<int>(pick(rng, {1, 2}));
  return t;
}

}  // namespace pto::testing
