// The simulator on what the compiler really emits: every op of the library, random
// shapes with ragged tails and its default config, on every built-in NPU target.
// Every program simulates, counts the instructions and tasks the program has, and
// reads and writes GM.
#include <gtest/gtest.h>

#include <random>

#include "core/compile.h"
#include "core/op_library.h"
#include "core/target.h"
#include "measure/sim/simulator.h"

namespace pto::sim {
namespace {

Shape random_shape(const OpDef& op, std::mt19937& rng) {
  std::uniform_int_distribution<int64_t> size(1, 300);
  Shape s;
  for (size_t d = 0; d < op.dims.size(); ++d) s.push_back(op.dims.size() == 4 && d < 2 ? size(rng) % 3 + 1 : size(rng));
  return s;
}

TEST(SimCompiled, EveryOpsDefaultProgramSimulatesOnEveryNpuTarget) {
  std::mt19937 rng(3);
  for (const std::string& name : builtin_target_names()) {
    const Target target = load_target(name);
    if (target.kind != TargetKind::Npu) continue;
    for (const OpDef& op : op_library()) {
      for (int trial = 0; trial < 2; ++trial) {
        Workload w{op.name, random_shape(op, rng), trial ? DType::F16 : DType::F32, {}};
        if (op.name == "attention") w.attrs["causal"] = trial;
        SCOPED_TRACE(name + " " + w.key());
        const TensorGraph graph = build_graph(w);
        const Program program = compile(graph, default_config(w, graph, target), target).program;
        const SimResult r = simulate(program, target);
        EXPECT_GT(r.cycles, 0);
        EXPECT_EQ(r.instructions, program.instruction_count());
        EXPECT_EQ(r.tasks, static_cast<int64_t>(program.tasks.size()));
        EXPECT_GT(r.gm_read_bytes, 0);
        EXPECT_GT(r.gm_write_bytes, 0);
        EXPECT_EQ(r.kernels.size(), program.kernels.size());
      }
    }
  }
}

// With split-K, chunks of one output tile add into it atomically: the simulator fetches
// those lines and still finishes every chunk.
TEST(SimCompiled, SplitKProgramsSimulate) {
  const Target target = load_target("ascend910b1");
  const Workload w{"matmul", {128, 8192, 256}, DType::F32, {}};
  const TensorGraph graph = build_graph(w);
  TileConfig config = default_config(w, graph, target);
  config.cube->split_k = true;
  const Program program = compile(graph, config, target).program;
  const SimResult split = simulate(program, target);
  config.cube->split_k = false;
  const SimResult whole = simulate(compile(graph, config, target).program, target);
  EXPECT_EQ(split.tasks, static_cast<int64_t>(program.tasks.size()));
  EXPECT_GT(split.cores_used.at(CoreType::AIC), whole.cores_used.at(CoreType::AIC));
  EXPECT_LT(split.cycles, whole.cycles);
}

}  // namespace
}  // namespace pto::sim
