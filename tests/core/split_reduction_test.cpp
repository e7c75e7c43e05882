// Split reductions (docs/compiler.md): a vector tile that cuts the dim an op reduces
// over streams the row in chunks. For every reducing op, every float dtype, rows from 1
// to 300000 wide with ragged last chunks, both reduction forms and random n-buffering,
// the CPU runtime must match the op's fp64 reference — on the host's programs and on
// ascend910b1's, whose hard UB limit is what makes the split necessary at LLM widths.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "core/analyze.h"
#include "core/compile.h"
#include "core/cpu_runtime.h"
#include "core/op_library.h"
#include "core/target.h"

namespace pto {
namespace {

using Rng = std::mt19937_64;

int64_t log_uniform(Rng& rng, int64_t lo, int64_t hi) {
  const double x = std::uniform_real_distribution<double>(std::log(lo), std::log(hi + 1.0))(rng);
  return std::clamp<int64_t>(static_cast<int64_t>(std::exp(x)), lo, hi);
}

// A chunk width that cuts the row (when it is wider than one aligned chunk) and keeps UB
// rows 32-byte aligned for every dtype: a multiple of 16 elements.
int64_t chunk_width(Rng& rng, int64_t cols) {
  if (cols <= 16) return cols;
  const int64_t most = std::min<int64_t>(cols - 1, 4096);
  return 16 * std::max<int64_t>(1, log_uniform(rng, 1, std::max<int64_t>(1, most / 16)));
}

struct Case {
  Workload w;
  TileConfig c;
};

Case random_case(const std::string& op, DType dtype, Rng& rng) {
  Case k;
  const int64_t cols = log_uniform(rng, 1, 300000);
  const int64_t rows = cols > 100000 ? 1 : std::uniform_int_distribution<int64_t>(1, 5)(rng);
  k.w = {op, {rows, cols}, dtype, {}};
  k.c.vec = Shape{std::uniform_int_distribution<int64_t>(1, rows)(rng), chunk_width(rng, cols)};
  k.c.reduce = rng() % 2 ? ReduceForm::Online : ReduceForm::Passes;
  k.c.nbuffer = static_cast<int>(1 + rng() % 3);
  return k;
}

void expect_reference(const Case& k, const Target& t, Rng& rng) {
  SCOPED_TRACE(k.w.key() + " " + k.c.to_string() + " on " + t.name);
  const TensorGraph g = build_graph(k.w);
  const TilingSummary s = analyze(g, k.c, t);
  ASSERT_TRUE(s.feasible) << format_violations(s.violations);
  const Compiled compiled = compile(g, k.c, t);
  const std::vector<HostTensor> inputs = random_inputs(g, rng());
  CpuExecutor exec(compiled.program, ExecOptions{2});
  exec.execute(inputs);
  const std::vector<HostTensor> want = find_op(k.w.op).reference(k.w, inputs);
  const std::vector<HostTensor> got = exec.outputs();
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i)
    EXPECT_TRUE(all_close(got[i], want[i], k.w.shape[1])) << "max diff " << max_abs_diff(got[i], want[i]);
}

TEST(SplitReduction, EveryReducingOpMatchesItsReferenceOnWideRaggedRows) {
  Rng rng(2025);
  const Target host = load_target("host"), npu = load_target("ascend910b1");
  int streamed = 0;
  for (const std::string op : {"sum", "amax", "softmax", "layernorm", "rmsnorm"}) {
    for (DType dtype : {DType::F16, DType::BF16, DType::F32}) {
      for (int trial = 0; trial < 4; ++trial) {
        const Case k = random_case(op, dtype, rng);
        const bool cut = (*k.c.vec)[1] < k.w.shape[1];
        streamed += cut;
        expect_reference(k, trial % 2 ? npu : host, rng);
        if (::testing::Test::HasFatalFailure()) return;
      }
    }
  }
  EXPECT_GT(streamed, 40);  // nearly every case cuts its row
}

// The LLM widths of the issue that made this necessary: a whole row does not fit UB.
TEST(SplitReduction, VocabularyRowsAreFeasibleOnlyWhenSplit) {
  const Target npu = load_target("ascend910b1");
  const Workload wide{"softmax", {2, 151936}, DType::F32, {}};
  const TensorGraph g = build_graph(wide);
  TileConfig whole;
  whole.vec = Shape{1, 151936};
  EXPECT_FALSE(analyze(g, whole, npu).feasible);
  TileConfig split = whole;
  split.vec = Shape{1, 4096};
  const TilingSummary s = analyze(g, split, npu);
  ASSERT_TRUE(s.feasible) << format_violations(s.violations);
  ASSERT_EQ(s.kernels.size(), 1u);
  EXPECT_EQ(s.kernels[0].stream_chunks, (151936 + 4095) / 4096);
  EXPECT_EQ(s.kernels[0].stream_passes, 2);  // online: max and sum together, then normalize
  split.reduce = ReduceForm::Passes;
  EXPECT_EQ(analyze(g, split, npu).kernels[0].stream_passes, 3);
}

// Online forms read the row once less: softmax's max and sum share a pass, and so do
// layernorm's mean and variance (Chan's combination).
TEST(SplitReduction, OnlineFormsSaveAPassOverTheRow) {
  const Target npu = load_target("ascend910b1");
  for (const std::string op : {"softmax", "layernorm"}) {
    const TensorGraph g = build_graph({op, {4, 20000}, DType::F32, {}});
    TileConfig c;
    c.vec = Shape{2, 2048};
    c.reduce = ReduceForm::Online;
    const TilingSummary online = analyze(g, c, npu);
    c.reduce = ReduceForm::Passes;
    const TilingSummary passes = analyze(g, c, npu);
    ASSERT_TRUE(online.feasible && passes.feasible) << op;
    EXPECT_EQ(online.kernels[0].stream_passes + 1, passes.kernels[0].stream_passes) << op;
    EXPECT_LT(online.kernels[0].gm_read_bytes, passes.kernels[0].gm_read_bytes) << op;
  }
}

// Chan's combination, on rows shifted by their first element, keeps layernorm accurate
// where the mean dwarfs the spread (1e4 + noise): at least as close to the fp64
// reference as the whole-row program, whose fp32 sum of 1e4-sized values loses digits,
// (outside the usual tolerance here), and within that tolerance, for wide and narrow
// chunks alike.
TEST(SplitReduction, LayernormStaysAccurateUnderALargeMean) {
  const Workload w{"layernorm", {2, 50000}, DType::F32, {}};
  const TensorGraph g = build_graph(w);
  std::vector<HostTensor> inputs = random_inputs(g, 7);
  for (int64_t i = 0; i < inputs[0].size(); ++i) inputs[0].set(i, 1e4 + inputs[0].get(i));
  const HostTensor want = find_op("layernorm").reference(w, inputs)[0];
  auto output_of = [&](const std::string& config) {
    const Compiled compiled = compile(g, TileConfig::parse(config), load_target("host"));
    CpuExecutor exec(compiled.program, ExecOptions{1});
    exec.execute(inputs);
    return exec.outputs()[0];
  };
  const double whole = max_abs_diff(output_of(R"({"vec":[1,50000]})"), want);
  for (const char* chunked : {R"({"vec":[1,1024],"reduce":"online"})", R"({"vec":[1,64],"reduce":"online"})"}) {
    const HostTensor got = output_of(chunked);
    EXPECT_TRUE(all_close(got, want, w.shape[1])) << chunked << ": " << max_abs_diff(got, want);
    EXPECT_LE(max_abs_diff(got, want), whole) << chunked;
  }
}

}  // namespace
}  // namespace pto
