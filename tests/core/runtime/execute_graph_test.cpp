// The execute graph: Cube -> vector epilogue dependencies and kernel barriers.

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <functional>
#include <cmath>
#include <limits>
#include <optional>
#include <random>
#include <sstream>

#include "core/cpu_runtime.h"
#include "core/error.h"
#include "core/runtime/decoded_block.h"
#include "core/runtime/convert.h"
#include "core/runtime/microkernel.h"
#include "core/runtime/panels.h"
#include "core/runtime/scheduler.h"
#include "core/runtime/strided.h"
#include "core/runtime/vec_math.h"
#include "tests/core/error_testing.h"
#include "tests/core/graph_eval.h"
#include "tests/core/runtime/runtime_programs.h"

namespace pto {
namespace {

using namespace testing;

// A fused epilogue: each Cube task stores its tile to `mm`; AIV tasks depending on it
// load sub-windows back, add a bias and store the output. Without the dependencies
// the AIV tasks would read stale tiles.
TEST(RuntimeExecuteGraph, EpilogueTasksWaitForTheirCubeTask) {
  const int64_t M = 64, N = 96, K = 32, tile = 32, sub = 16;
  ProgramBuilder pb;
  const int a = pb.tensor("a", {M, K}, DType::F32, TensorRole::Input, 0);
  const int b = pb.tensor("b", {K, N}, DType::F32, TensorRole::Input, 1);
  const int bias = pb.tensor("bias", {N}, DType::F32, TensorRole::Input, 2);
  const int mm = pb.tensor("mm", {M, N}, DType::F32);
  const int out = pb.tensor("out", {M, N}, DType::F32, TensorRole::Output, 0);
  const int k = pb.kernel("mm_bias", {}, true);
  for (int64_t m0 = 0; m0 < M; m0 += tile)
    for (int64_t n0 = 0; n0 < N; n0 += tile) {
      pb.block("mm", CoreType::AIC);
      const int l1a = pb.buffer("a.l1", MemLevel::L1, DType::F32, {tile, K}, Layout::FractalA);
      const int l1b = pb.buffer("b.l1", MemLevel::L1, DType::F32, {K, tile}, Layout::FractalB);
      const int l0a = pb.buffer("a.l0", MemLevel::L0A, DType::F32, {tile, K});
      const int l0b = pb.buffer("b.l0", MemLevel::L0B, DType::F32, {K, tile});
      const int l0c = pb.buffer("c.l0", MemLevel::L0C, DType::F32, {tile, tile});
      pb.emit(Opcode::TLOAD, loc(MemLevel::L1, l1a, {0, 0}, {tile, K}), {gm(0, {0, 0}, {tile, K})});
      pb.emit(Opcode::TLOAD, loc(MemLevel::L1, l1b, {0, 0}, {K, tile}), {gm(1, {0, 0}, {K, tile})});
      pb.emit(Opcode::TMOV, loc(MemLevel::L0A, l0a, {0, 0}, {tile, K}), {loc(MemLevel::L1, l1a, {0, 0}, {tile, K})});
      pb.emit(Opcode::TMOV, loc(MemLevel::L0B, l0b, {0, 0}, {K, tile}), {loc(MemLevel::L1, l1b, {0, 0}, {K, tile})});
      pb.emit(Opcode::TMATMUL, loc(MemLevel::L0C, l0c, {0, 0}, {tile, tile}),
              {loc(MemLevel::L0A, l0a, {0, 0}, {tile, K}), loc(MemLevel::L0B, l0b, {0, 0}, {K, tile})});
      pb.emit(Opcode::TSTORE, gm(2, {0, 0}, {tile, tile}), {loc(MemLevel::L0C, l0c, {0, 0}, {tile, tile})});
      const int cube_task = pb.task(k, {{a, {m0, 0}}, {b, {0, n0}}, {mm, {m0, n0}}});
      for (int64_t i = 0; i < tile; i += sub)
        for (int64_t j = 0; j < tile; j += sub) {
          pb.block("bias");
          const int u = pb.buffer("mm.ub", MemLevel::UB, DType::F32, {sub, sub});
          const int ubias = pb.buffer("bias.ub", MemLevel::UB, DType::F32, {1, sub});
          pb.emit(Opcode::TLOAD, ub(u, {0, 0}, {sub, sub}), {gm(0, {0, 0}, {sub, sub})});
          pb.emit(Opcode::TLOAD, ub(ubias, {0, 0}, {1, sub}), {gm(1, {0}, {sub})});
          pb.vec(OpKind::Add, ub(u, {0, 0}, {sub, sub}), {ub(u, {0, 0}, {sub, sub}), ub(ubias, {0, 0}, {1, sub})});
          pb.emit(Opcode::TSTORE, gm(2, {0, 0}, {sub, sub}), {ub(u, {0, 0}, {sub, sub})});
          pb.task(k, {{mm, {m0 + i, n0 + j}}, {bias, {n0 + j}}, {out, {m0 + i, n0 + j}}}, {cube_task});
        }
    }
  const HostTensor ta = random_tensor({M, K}, DType::F32, 1), tb = random_tensor({K, N}, DType::F32, 2),
                   tbias = random_tensor({N}, DType::F32, 3);
  HostTensor want({M, N}, DType::F32);
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      double acc = tbias.get(j);
      for (int64_t p = 0; p < K; ++p) acc += ta.get(i * K + p) * tb.get(p * N + j);
      want.set(i * N + j, acc);
    }
  CpuExecutor exec(pb.p, ExecOptions{2});
  for (int rep = 0; rep < 5; ++rep) {
    const HostTensor got = exec.run({ta, tb, tbias})[0];
    ASSERT_TRUE(all_close(got, want, K)) << "run " << rep << ": " << max_abs_diff(got, want);
  }
}

// A chain of kernels, each adding 1 to the previous one's tensor, with many small
// tasks: any kernel starting before its `after` finished would read stale values.
TEST(RuntimeExecuteGraph, KernelBarriersOrderAChain) {
  const int64_t n = 512, tile = 16;
  const int stages = 6;
  ProgramBuilder pb;
  std::vector<int> t{pb.tensor("x", {n}, DType::F32, TensorRole::Input, 0)};
  for (int s = 0; s < stages; ++s)
    t.push_back(pb.tensor("t", {n}, DType::F32,
                          s + 1 == stages ? TensorRole::Output : TensorRole::Intermediate, s + 1 == stages ? 0 : -1));
  int prev = -1;
  for (int s = 0; s < stages; ++s) {
    prev = pb.kernel("inc", prev < 0 ? std::vector<int>{} : std::vector<int>{prev});
    for (int64_t i0 = 0; i0 < n; i0 += tile) {
      pb.block("inc");
      const int u = pb.buffer("u", MemLevel::UB, DType::F32, {tile});
      pb.emit(Opcode::TLOAD, ub(u, {0}, {tile}), {gm(0, {0}, {tile})});
      pb.vec(OpKind::Add, ub(u, {0}, {tile}), {ub(u, {0}, {tile})}).scalar = 1.0;
      pb.emit(Opcode::TSTORE, gm(1, {0}, {tile}), {ub(u, {0}, {tile})});
      pb.task(prev, {{t[s], {i0}}, {t[s + 1], {i0}}});
    }
  }
  const HostTensor x = random_tensor({n}, DType::F32, 5);
  CpuExecutor exec(pb.p, ExecOptions{2});
  for (int rep = 0; rep < 5; ++rep) {
    const HostTensor got = exec.run({x})[0];
    for (int64_t i = 0; i < n; ++i) ASSERT_FLOAT_EQ(static_cast<float>(got.get(i)), static_cast<float>(x.get(i) + stages));
  }
}

}  // namespace
}  // namespace pto
