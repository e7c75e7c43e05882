// THE property test of pto-tune: for every op of the library, random shapes (ragged
// sizes, size-1 dims), random feasible configs (vec and cube tiles, fusion partitions,
// n-buffering, L2 grouping, split-K) and every dtype the op takes, compile() and run
// the program on the CPU, and compare with the op's fp64 reference. Configs are drawn
// feasible for the host target and for ascend910b1: a program means the same on any
// target, so the NPU's programs run on the CPU too. Each program runs twice on one
// executor, first on other inputs, as the cpu runner's timed runs do.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <sstream>

#include "core/analyze.h"
#include "core/compile.h"
#include "core/cpu_runtime.h"
#include "core/error.h"
#include "core/op_library.h"
#include "core/target.h"
#include "tests/random_attention_config.h"
#include "tests/random_attrs.h"

namespace pto {
namespace {

using Rng = std::mt19937_64;

int64_t pick(Rng& rng, std::initializer_list<int64_t> values) {
  return *(values.begin() + static_cast<std::ptrdiff_t>(rng() % values.size()));
}
int64_t uniform(Rng& rng, int64_t lo, int64_t hi) { return lo + static_cast<int64_t>(rng() % static_cast<uint64_t>(hi - lo + 1)); }

// A dim size: often 1 or a small ragged size, sometimes a larger one that no tile divides.
int64_t random_dim(Rng& rng, int64_t max) {
  switch (rng() % 4) {
    case 0: return pick(rng, {1, 2, 3});
    case 1: return uniform(rng, 1, std::min<int64_t>(max, 24));
    default: return uniform(rng, 1, max);
  }
}

Workload random_workload(const OpDef& op, DType dtype, Rng& rng) {
  Workload w;
  w.op = op.name;
  w.dtype = dtype;
  for (const std::string& d : op.dims) {
    int64_t max = 150;
    if (d == "B" || d == "H") max = 3;
    if (op.name == "attention" && (d == "S" || d == "D")) max = 48;
    w.shape.push_back(random_dim(rng, max));
  }
  pto::testing::draw_attrs(op, w, rng);
  return w;
}

bool has_matmul(const TensorGraph& g) {
  return std::any_of(g.nodes().begin(), g.nodes().end(), [](const Node& n) { return n.kind == OpKind::Matmul; });
}

size_t widest_rank(const TensorGraph& g) {
  size_t r = 1;
  for (const Node& n : g.nodes()) r = std::max(r, n.shape.size());
  return std::min<size_t>(r, 4);
}

int64_t random_tile(Rng& rng, int64_t dim) {
  switch (rng() % 4) {
    case 0: return dim;  // whole dim (keeps reduction axes unsplit)
    case 1: return pick(rng, {1, 2, 4, 8});
    case 2: return pick(rng, {16, 32, 64, 128});
    default: return uniform(rng, 1, std::max<int64_t>(dim, 1));
  }
}

// Consecutive runs of the compute nodes; the compiler rejects the invalid ones.
std::vector<std::vector<int>> random_fusion(const TensorGraph& g, Rng& rng) {
  std::vector<std::vector<int>> groups;
  for (NodeId id : g.compute_nodes()) {
    if (groups.empty() || rng() % 3 == 0) groups.emplace_back();
    groups.back().push_back(id);
  }
  return groups;
}

TileConfig random_config(const TensorGraph& g, const Workload& w, Rng& rng) {
  if (w.op == "flash_attention") return pto::testing::random_attention_config(rng, w);
  TileConfig c;
  const Node& widest = *std::max_element(g.nodes().begin(), g.nodes().end(),
                                         [](const Node& a, const Node& b) { return a.shape.size() < b.shape.size(); });
  const size_t rank = widest_rank(g);
  Shape vec;
  for (size_t d = widest.shape.size() - rank; d < widest.shape.size(); ++d) vec.push_back(random_tile(rng, widest.shape[d]));
  if (rng() % 3) vec.back() = widest.shape.back();  // reductions run over the last dim, whole or split
  c.vec = vec;
  c.reduce = rng() % 2 ? ReduceForm::Online : ReduceForm::Passes;
  if (has_matmul(g)) {
    CubeTile t;
    t.mL0 = pick(rng, {16, 32, 48, 64});
    t.mL1 = t.mL0 * pick(rng, {1, 2, 3});
    t.nL0 = pick(rng, {16, 32, 48, 64});
    t.nL1 = t.nL0 * pick(rng, {1, 2});
    t.kL0 = pick(rng, {16, 32, 64});
    t.kAL1 = t.kL0 * pick(rng, {1, 2, 4});
    t.kBL1 = rng() % 2 ? t.kAL1 : t.kL0 * pick(rng, {1, 2, 4});
    if (std::max(t.kAL1, t.kBL1) % std::min(t.kAL1, t.kBL1)) t.kBL1 = t.kAL1;
    t.split_k = rng() % 4 == 0;
    // A K loop over views of 1 to 4 of the larger L1 K tile (infeasible ones are drawn again).
    if (!t.split_k && rng() % 3 == 0) t.k_view = std::max(t.kAL1, t.kBL1) * pick(rng, {1, 2, 3, 4});
    c.cube = t;
  }
  c.nbuffer = static_cast<int>(uniform(rng, 1, 2));
  if (rng() % 3 == 0) c.l2_group = std::make_pair(uniform(rng, 1, 3), uniform(rng, 1, 3));
  if (rng() % 3 == 0) c.fusion = random_fusion(g, rng);
  return c;
}

// A random config the target accepts, or the default one after enough misses.
TileConfig feasible_config(const TensorGraph& g, const Workload& w, const Target& t, Rng& rng) {
  const Analyzer analyzer(g, t);
  for (int attempt = 0; attempt < 40; ++attempt) {
    const TileConfig c = random_config(g, w, rng);
    try {
      if (analyzer.analyze(c).feasible) return c;
    } catch (const Error& e) {
      if (e.category() != ErrorCategory::Usage) throw;  // an invalid fusion list: draw again
    }
  }
  return default_config(w, g, t);
}

// Largest reduction length of the workload, by which the tolerance widens.
int64_t accumulation(const Workload& w) { return *std::max_element(w.shape.begin(), w.shape.end()); }

struct Outcome {
  int cases = 0;
  int random_configs = 0;
};

// Compiles w with `config` (into *program when given), runs the program on the CPU and
// compares it with the op's reference.
void expect_matches_reference(const OpDef& op, const Workload& w, const TensorGraph& g, const TileConfig& config,
                              const Target& target, Rng& rng, Program* program = nullptr) {
  const Compiled compiled = compile(g, config, target);
  if (program) *program = compiled.program;
  const std::vector<HostTensor> inputs = random_inputs(g, rng());
  const std::vector<HostTensor> want = op.reference(w, inputs);
  CpuExecutor exec(compiled.program, ExecOptions{static_cast<int>(uniform(rng, 1, 2))});
  // A run on other inputs first: what outputs() returns must come from the last
  // execute() alone, as the cpu runner's timed runs reuse one executor.
  exec.execute(random_inputs(g, rng()));
  exec.execute(inputs);
  const std::vector<HostTensor> got = exec.outputs();
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_EQ(got[i].shape(), want[i].shape()) << "output " << i;
    ASSERT_EQ(got[i].dtype(), want[i].dtype()) << "output " << i;
    EXPECT_TRUE(all_close(got[i], want[i], accumulation(w)))
        << "output " << i << ": max diff " << max_abs_diff(got[i], want[i]);
  }
}

void check_case(const OpDef& op, DType dtype, const Target& target, Rng& rng, Outcome& outcome) {
  const Workload w = random_workload(op, dtype, rng);
  const TensorGraph g = build_graph(w);
  const TileConfig config = feasible_config(g, w, target, rng);
  std::ostringstream what;
  what << w.key() << " on " << target.name << " with " << config.to_string();
  SCOPED_TRACE(what.str());
  expect_matches_reference(op, w, g, config, target, rng);
  ++outcome.cases;
  if (!(config == default_config(w, g, target))) ++outcome.random_configs;
}

class EndToEnd : public ::testing::TestWithParam<std::string> {};

TEST_P(EndToEnd, EveryOpMatchesItsReferenceOnRandomShapesAndConfigs) {
  const Target target = load_target(GetParam());
  Rng rng(std::hash<std::string>{}(GetParam()));
  Outcome outcome;
  for (const OpDef& op : op_library()) {
    const int trials = op.name.find("attention") != std::string::npos || op.name.find("matmul") != std::string::npos ? 10 : 5;
    const int random_before = outcome.random_configs;
    for (DType dtype : op.dtypes)
      for (int trial = 0; trial < trials; ++trial) {
        SCOPED_TRACE(op.name + " " + dtype_name(dtype) + " trial " + std::to_string(trial));
        check_case(op, dtype, target, rng, outcome);
        if (::testing::Test::HasFatalFailure()) return;
      }
    EXPECT_GT(outcome.random_configs, random_before) << op.name << ": only default configs ran";
  }
  // The random draws must mostly succeed, or the test would only cover default configs.
  EXPECT_GT(outcome.random_configs, outcome.cases * 3 / 4) << outcome.random_configs << " of " << outcome.cases;
}

INSTANTIATE_TEST_SUITE_P(Targets, EndToEnd, ::testing::Values("host", "ascend910b1"));

// Rows of the first "kq.ub" buffer: the tokens a vector unit dequantizes at a time.
int64_t dequant_rows(const Program& p) {
  for (const BlockProgram& b : p.blocks)
    for (const LocalBuffer& buf : b.buffers)
      if (buf.name.rfind("kq.ub", 0) == 0) return buf.shape[0];
  return 0;
}

// An int8 KV cache with a wide head: a vector unit's share of a 128-token block does not
// fit its UB at once, so it dequantizes the share in chunks (through WS on ascend910b1,
// straight into L1 on ascend950pr); random shapes and dtypes, checked against the fp64
// reference.
TEST(EndToEndInt8Kv, WideHeadsDequantizeInChunksAndMatchTheReference) {
  Rng rng(2026);
  const OpDef& op = find_op("flash_attention");
  for (const char* target_name : {"ascend910b1", "ascend950pr"}) {
    const Target target = load_target(target_name);
    for (int trial = 0; trial < 3; ++trial) {
      Workload w;
      w.op = op.name;
      w.dtype = trial % 2 ? DType::F16 : DType::F32;
      const int64_t heads = uniform(rng, 1, 2), sq = uniform(rng, 1, 40);
      w.shape = {1, heads, sq, uniform(rng, sq, 300), uniform(rng, 200, 320)};
      w.attrs = {{"causal", static_cast<int64_t>(rng() % 2)}, {"kv_heads", 1}, {"kv_dtype", static_cast<int64_t>(DType::I8)}};
      SCOPED_TRACE(w.key() + " on " + target.name);
      const TensorGraph g = build_graph(w);
      Program program;
      expect_matches_reference(op, w, g, default_config(w, g, target), target, rng, &program);
      if (::testing::Test::HasFatalFailure()) return;
      EXPECT_LT(dequant_rows(program), kKvQuantBlock / 2) << "a share dequantized whole: no chunks";
    }
  }
}

}  // namespace
}  // namespace pto
