// jit_compile: the provider's config when it compiles, the default otherwise, the
// choice saying which — with a fake ConfigProvider — and the program cache.
#include <thread>

#include <gtest/gtest.h>

#include "core/error.h"
#include "core/jit.h"
#include "core/op_library.h"
#include "tests/builtin_targets.h"

namespace pto {
namespace {

using testing::npu;

class FakeProvider : public ConfigProvider {
 public:
  explicit FakeProvider(std::optional<TileConfig> answer, ConfigSource source = ConfigSource::Exact,
                        std::optional<Shape> from = std::nullopt)
      : answer_(std::move(answer)), source_(source), from_(std::move(from)) {}
  std::optional<ConfigChoice> lookup(const Workload& w, const Target& t) override {
    ++calls;
    last_key = w.key();
    last_target = t.name;
    if (!answer_) return std::nullopt;
    return ConfigChoice{*answer_, source_, from_, false, {}};
  }
  int calls = 0;
  std::string last_key, last_target;

 private:
  std::optional<TileConfig> answer_;
  ConfigSource source_;
  std::optional<Shape> from_;
};

const Workload kMatmul = Workload::parse_key("matmul|256,256,256|fp16");

TEST(Jit, ExactHitIsCompiledWithTheTunedConfig) {
  const TileConfig tuned = TileConfig::parse(R"({"cube":{"m":[64,64],"k":[32,64],"n":[64,128]},"nbuffer":2})");
  FakeProvider provider(tuned, ConfigSource::Exact);
  const JitResult r = jit_compile(kMatmul, npu(), &provider);
  EXPECT_EQ(provider.calls, 1);
  EXPECT_EQ(provider.last_key, kMatmul.key());
  EXPECT_EQ(provider.last_target, "ascend910b1");
  EXPECT_EQ(r.choice.describe(), "exact");
  EXPECT_EQ(r.compiled->config.cube, tuned.cube);
  EXPECT_EQ(r.compiled->program.tasks.size(), 4u * 2u);
}

TEST(Jit, NearestHitKeepsItsSource) {
  FakeProvider provider(TileConfig::parse(R"({"cube":{"m":[128,128],"k":[64,256],"n":[128,128]}})"),
                        ConfigSource::Nearest, Shape{512, 512, 512});
  EXPECT_EQ(jit_compile(kMatmul, npu(), &provider).choice.describe(), "nearest 512,512,512");
}

TEST(Jit, InfeasibleHitFallsBackToTheDefault) {
  FakeProvider provider(TileConfig::parse(R"({"cube":{"m":[256,256],"k":[64,256],"n":[256,256]}})"));
  const JitResult r = jit_compile(kMatmul, npu(), &provider);
  EXPECT_EQ(r.choice.source, ConfigSource::Default);
  const TileConfig expected = default_config(kMatmul, build_graph(kMatmul), npu());
  EXPECT_EQ(r.compiled->config.cube, expected.cube);
  EXPECT_EQ(r.choice.config, expected);
}

TEST(Jit, MalformedHitFallsBackToTheDefault) {
  TileConfig bad;
  bad.fusion = std::vector<std::vector<int>>{{0}};  // an input, not a compute node
  FakeProvider provider(bad);
  EXPECT_EQ(jit_compile(kMatmul, npu(), &provider).choice.describe(), "default");
}

TEST(Jit, NoHitOrNoProviderTakesTheDefault) {
  FakeProvider provider(std::nullopt);
  EXPECT_EQ(jit_compile(kMatmul, npu(), &provider).choice.source, ConfigSource::Default);
  EXPECT_EQ(provider.calls, 1);
  const JitResult r = jit_compile(Workload::parse_key("softmax|64,128|fp16"), npu(), nullptr);
  EXPECT_EQ(r.choice.source, ConfigSource::Default);
  EXPECT_FALSE(r.compiled->program.tasks.empty());
}

TEST(Jit, BadWorkloadIsAUsageError) {
  FakeProvider provider(std::nullopt);
  try {
    jit_compile(Workload::parse_key("matmul|256,256|fp16"), npu(), &provider);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.category(), ErrorCategory::Usage);
  }
  EXPECT_EQ(provider.calls, 0);
}

TEST(Jit, DescribeNamesTheSourceTheShapeAndStaleness) {
  ConfigChoice c{TileConfig{}, ConfigSource::Nearest, Shape{64, 32}, true, "made by compiler 0.1.0 (now 0.2.0)"};
  EXPECT_EQ(c.describe(), "nearest 64,32 (stale: made by compiler 0.1.0 (now 0.2.0))");
  EXPECT_EQ((ConfigChoice{TileConfig{}, ConfigSource::Model, {}, false, {}}).describe(), "model");
}

TEST(Jit, CompiledProgramsAreCachedByWorkloadTargetAndConfig) {
  jit_cache_clear();
  const TileConfig a = TileConfig::parse(R"({"cube":{"m":[64,64],"k":[32,64],"n":[64,128]}})");
  const TileConfig b = TileConfig::parse(R"({"cube":{"m":[32,32],"k":[32,64],"n":[64,64]}})");
  FakeProvider pa(a), pb(b);
  const JitResult first = jit_compile(kMatmul, npu(), &pa);
  const JitResult again = jit_compile(kMatmul, npu(), &pa);
  EXPECT_FALSE(first.cache_hit);
  EXPECT_TRUE(again.cache_hit);
  EXPECT_EQ(first.compiled.get(), again.compiled.get());
  const JitResult other_config = jit_compile(kMatmul, npu(), &pb);
  EXPECT_FALSE(other_config.cache_hit);
  EXPECT_EQ(other_config.compiled->config.cube, b.cube);
  const JitResult other_target = jit_compile(kMatmul, load_target("ascend910b2"), &pa);
  EXPECT_FALSE(other_target.cache_hit);
  const JitResult other_shape = jit_compile(Workload::parse_key("matmul|256,256,512|fp16"), npu(), &pa);
  EXPECT_FALSE(other_shape.cache_hit);
  EXPECT_EQ(jit_cache_size(), 4u);
}

TEST(Jit, TheCacheIsSafeUnderManyThreads) {
  jit_cache_clear();
  std::vector<std::thread> threads;
  std::vector<const Compiled*> seen(8);
  for (size_t i = 0; i < seen.size(); ++i) {
    threads.emplace_back([&, i] {
      for (int round = 0; round < 3; ++round) {
        const JitResult r = jit_compile(Workload::parse_key("softmax|64," + std::to_string(128 << (round % 2)) + "|fp16"),
                                        npu(), nullptr);
        if (round == 2) seen[i] = r.compiled.get();
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(jit_cache_size(), 2u);
  for (const Compiled* c : seen) EXPECT_EQ(c, seen[0]);
}

}  // namespace
}  // namespace pto
