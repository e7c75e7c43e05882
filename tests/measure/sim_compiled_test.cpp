// The simulator on what the compiler really emits: every op of the library, random
// shapes with ragged tails and its default config, on every built-in NPU target.
// Every program simulates, counts the instructions and tasks the program has, and
// reads and writes GM.
#include <gtest/gtest.h>

#include <random>

#include "core/compile.h"
#include "core/op_library.h"
#include "core/target.h"
#include "core/analyze.h"
#include "measure/sim/simulator.h"
#include "tests/random_attention_config.h"
#include "tests/random_attrs.h"

namespace pto::sim {
namespace {

Shape random_shape(const OpDef& op, std::mt19937& rng) {
  std::uniform_int_distribution<int64_t> size(1, 300);
  Shape s;
  for (const std::string& d : op.dims) s.push_back(d == "B" || d == "H" ? size(rng) % 3 + 1 : size(rng));
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

// flash_attention's pipelines (flags between a Cube unit and its vector units, slots
// reused n blocks later, WS or direct hand-offs, KV splits and their combine) finish on
// every NPU target for random feasible configs: no wait is left without its set.
TEST(SimCompiled, RandomFlashAttentionConfigsSimulateOnEveryNpuTarget) {
  std::mt19937 rng(17);
  const OpDef& op = find_op("flash_attention");
  for (const std::string& name : builtin_target_names()) {
    const Target target = load_target(name);
    if (target.kind != TargetKind::Npu) continue;
    int simulated = 0;
    for (int trial = 0; trial < 12; ++trial) {
      Workload w{op.name, random_shape(op, rng), trial % 2 ? DType::F16 : DType::F32, {}};
      w.shape[4] = w.shape[4] % 160 + 1;
      pto::testing::draw_attrs(op, w, rng);
      const TensorGraph graph = build_graph(w);
      const Analyzer analyzer(graph, target);
      for (int draw = 0; draw < 30; ++draw) {
        const TileConfig config = pto::testing::random_attention_config(rng, w);
        if (!analyzer.analyze(config).feasible) continue;
        SCOPED_TRACE(name + " " + w.key() + " " + config.to_string());
        const Program program = compile(graph, config, target).program;
        const SimResult r = simulate(program, target);
        EXPECT_GT(r.cycles, 0);
        EXPECT_EQ(r.instructions, program.instruction_count());
        EXPECT_EQ(r.tasks, static_cast<int64_t>(program.tasks.size()));
        ++simulated;
        break;
      }
    }
    EXPECT_GE(simulated, 6) << name << ": too few feasible random configs";
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
