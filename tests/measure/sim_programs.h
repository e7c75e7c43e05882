// Hand-built PTO programs for the simulator tests, written the way docs/compiler.md
// describes codegen, so that the simulator can be tested without the compiler:
//   - tiled_matmul(): a cube kernel, one task per [mL1, nL1] output tile, K stepped
//     by kL1 through n-buffered L1 slots and by kL0 through double-buffered L0A/L0B,
//     with the MTE2 -> MTE1 -> M -> FIX flags, in row-major or L2-grouped order;
//   - vector_block(): a streaming vector task, optionally n-buffered;
//   - make_task, one_kernel: small helpers around tests/program_builder.h's BlockBuilder.
#pragma once

#include <algorithm>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "core/program.h"
#include "core/target.h"
#include "tests/program_builder.h"

namespace pto::sim::testing {

// The target every simulator test starts from, loaded once.
inline const Target& b1() {
  static const Target t = load_target("ascend910b1");
  return t;
}

using pto::testing::BlockBuilder;
using pto::testing::gm;
using pto::testing::gm_tensor;
using pto::testing::local;


inline Task make_task(int id, int block, CoreType core, std::vector<TensorBinding> bindings, std::vector<int> deps = {}) {
  Task t;
  t.id = id;
  t.kernel = 0;
  t.block = block;
  t.core = core;
  t.bindings = std::move(bindings);
  t.deps = std::move(deps);
  return t;
}

// One kernel holding every task, dispatched in task order.
inline Program one_kernel(std::vector<GmTensor> tensors, std::vector<BlockProgram> blocks, std::vector<Task> tasks,
                          std::string target = "ascend910b1") {
  Program p;
  p.target = std::move(target);
  p.tensors = std::move(tensors);
  p.blocks = std::move(blocks);
  Kernel k;
  k.id = 0;
  k.name = "k0";
  for (const Task& t : tasks) k.tasks.push_back(t.id);
  p.kernels.push_back(std::move(k));
  p.tasks = std::move(tasks);
  return p;
}

// A streaming vector block: load x[rows, 512] fp16 into UB, `adds` adds, store y. With
// slots > 1 the input buffer is n-buffered ("x.ub[0]".."x.ub[slots-1]").
inline BlockProgram vector_block(int id, int64_t rows, int adds, int slots = 1) {
  BlockBuilder b(id, "vec" + std::to_string(id), CoreType::AIV);
  int in = -1;
  for (int s = 0; s < slots; ++s) {
    const int buf = b.buffer(MemLevel::UB, DType::F16, {rows, 512});
    if (s == 0) in = buf;
  }
  const int out = b.buffer(MemLevel::UB, DType::F16, {rows, 512});
  b.load(local(MemLevel::UB, in, {rows, 512}), gm(0, {0, 0}, {rows, 512}));
  b.sync(Pipe::MTE2, Pipe::V, 0);
  for (int i = 0; i < adds; ++i)
    b.vec(OpKind::Add, local(MemLevel::UB, out, {rows, 512}), {local(MemLevel::UB, in, {rows, 512}), local(MemLevel::UB, out, {rows, 512})});
  b.sync(Pipe::V, Pipe::MTE3, 0);
  b.store(gm(1, {0, 0}, {rows, 512}), local(MemLevel::UB, out, {rows, 512}));
  BlockProgram block = b.build();
  for (int s = 0; s < slots; ++s) block.buffers[s].name = "x.ub[" + std::to_string(s) + "]";
  return block;
}

// The tensors vector_block reads and writes: x and y of [rows, 512] fp16.
inline std::vector<GmTensor> xy(int64_t rows) {
  return {gm_tensor(0, "x", DType::F16, {rows, 512}, TensorRole::Input),
          gm_tensor(1, "y", DType::F16, {rows, 512}, TensorRole::Output)};
}

// Tasks over consecutive row tiles of x and y; task i runs blocks[i % blocks.size()].
inline std::vector<Task> row_tasks(int count, int64_t rows, const std::vector<int>& blocks) {
  std::vector<Task> tasks;
  for (int i = 0; i < count; ++i)
    tasks.push_back(make_task(i, blocks[i % blocks.size()], CoreType::AIV, {{0, {i * rows, 0}}, {1, {i * rows, 0}}}));
  return tasks;
}

struct MatmulSpec {
  int64_t M = 256, K = 256, N = 256;
  int64_t mL1 = 128, nL1 = 256, kL1 = 256, kL0 = 64;
  int nbuffer = 2;
  std::pair<int64_t, int64_t> l2_group{0, 0};  // {0,0}: row-major dispatch
  DType dtype = DType::F16;
  std::string target = "ascend910b1";
};

// The block program of one output tile of extent [m, n] (mL0 = m, nL0 = n).
inline BlockProgram matmul_block(int id, const MatmulSpec& s, int64_t m, int64_t n) {
  BlockBuilder b(id, "mm_" + std::to_string(m) + "x" + std::to_string(n), CoreType::AIC);
  const int nb = s.nbuffer;
  std::vector<int> a_l1, b_l1;
  for (int i = 0; i < nb; ++i) {
    a_l1.push_back(b.buffer(MemLevel::L1, s.dtype, {s.mL1, s.kL1}));
    b_l1.push_back(b.buffer(MemLevel::L1, s.dtype, {s.kL1, s.nL1}));
  }
  const int a_l0[2] = {b.buffer(MemLevel::L0A, s.dtype, {m, s.kL0}), b.buffer(MemLevel::L0A, s.dtype, {m, s.kL0})};
  const int b_l0[2] = {b.buffer(MemLevel::L0B, s.dtype, {s.kL0, n}), b.buffer(MemLevel::L0B, s.dtype, {s.kL0, n})};
  const int c_l0 = b.buffer(MemLevel::L0C, DType::F32, {m, n});
  int64_t sub = 0;  // global kL0 sub-step, picks the L0 slot
  for (int64_t step = 0, k0 = 0; k0 < s.K; ++step, k0 += s.kL1) {
    const int slot = static_cast<int>(step % nb);
    const int64_t kext = std::min(s.kL1, s.K - k0);
    if (step >= nb) b.wait_flag(Pipe::MTE1, Pipe::MTE2, slot);
    b.load(local(MemLevel::L1, a_l1[slot], {m, kext}), gm(0, {0, k0}, {m, kext}));
    b.load(local(MemLevel::L1, b_l1[slot], {kext, n}), gm(1, {k0, 0}, {kext, n}));
    b.sync(Pipe::MTE2, Pipe::MTE1, slot);
    for (int64_t kk = 0; kk < kext; kk += s.kL0, ++sub) {
      const int l0 = static_cast<int>(sub % 2);
      const int64_t ke = std::min(s.kL0, kext - kk);
      if (sub >= 2) b.wait_flag(Pipe::M, Pipe::MTE1, l0);
      b.move(Pipe::MTE1, local(MemLevel::L0A, a_l0[l0], {m, ke}), local(MemLevel::L1, a_l1[slot], {m, ke}, {0, kk}));
      b.move(Pipe::MTE1, local(MemLevel::L0B, b_l0[l0], {ke, n}), local(MemLevel::L1, b_l1[slot], {ke, n}, {kk, 0}));
      b.sync(Pipe::MTE1, Pipe::M, l0);
      b.matmul(local(MemLevel::L0C, c_l0, {m, n}), local(MemLevel::L0A, a_l0[l0], {m, ke}),
               local(MemLevel::L0B, b_l0[l0], {ke, n}), sub > 0);
      b.set_flag(Pipe::M, Pipe::MTE1, l0);
    }
    b.set_flag(Pipe::MTE1, Pipe::MTE2, slot);
  }
  b.sync(Pipe::M, Pipe::FIX, 0);
  b.store(gm(2, {0, 0}, {m, n}), local(MemLevel::L0C, c_l0, {m, n}));
  return b.build();
}

// Output tiles in dispatch order: row-major, or in groups of mDim x nDim tiles
// (row-major inside a group, groups row-major over the grid, edge groups smaller).
inline std::vector<std::pair<int64_t, int64_t>> tile_order(int64_t mt, int64_t nt, std::pair<int64_t, int64_t> group) {
  auto [gm_, gn] = group;
  if (gm_ <= 0 || gn <= 0) gm_ = 1, gn = nt;
  std::vector<std::pair<int64_t, int64_t>> order;
  for (int64_t g0 = 0; g0 < mt; g0 += gm_)
    for (int64_t h0 = 0; h0 < nt; h0 += gn)
      for (int64_t i = g0; i < std::min(mt, g0 + gm_); ++i)
        for (int64_t j = h0; j < std::min(nt, h0 + gn); ++j) order.emplace_back(i, j);
  return order;
}

inline Program tiled_matmul(const MatmulSpec& s) {
  Program p;
  p.target = s.target;
  p.tensors = {gm_tensor(0, "a", s.dtype, {s.M, s.K}, TensorRole::Input),
               gm_tensor(1, "b", s.dtype, {s.K, s.N}, TensorRole::Input),
               gm_tensor(2, "c", s.dtype, {s.M, s.N}, TensorRole::Output)};
  Kernel k;
  k.id = 0;
  k.name = "matmul";
  k.uses_cube = true;
  std::map<std::pair<int64_t, int64_t>, int> block_of;  // tile extents -> block
  const int64_t mt = (s.M + s.mL1 - 1) / s.mL1, nt = (s.N + s.nL1 - 1) / s.nL1;
  for (auto [i, j] : tile_order(mt, nt, s.l2_group)) {
    const int64_t m = std::min(s.mL1, s.M - i * s.mL1), n = std::min(s.nL1, s.N - j * s.nL1);
    auto [it, fresh] = block_of.try_emplace({m, n}, static_cast<int>(p.blocks.size()));
    if (fresh) p.blocks.push_back(matmul_block(it->second, s, m, n));
    Task t;
    t.id = static_cast<int>(p.tasks.size());
    t.kernel = 0;
    t.block = it->second;
    t.core = CoreType::AIC;
    t.bindings = {{0, {i * s.mL1, 0}}, {1, {0, j * s.nL1}}, {2, {i * s.mL1, j * s.nL1}}};
    t.tile_index = {i, j};
    k.tasks.push_back(t.id);
    p.tasks.push_back(std::move(t));
  }
  p.kernels.push_back(std::move(k));
  return p;
}

}  // namespace pto::sim::testing
