// jit_compile: the provider's config when it compiles, the default otherwise, and
// config_source saying which — with a fake ConfigProvider.
#include <gtest/gtest.h>

#include "core/error.h"
#include "core/jit.h"
#include "core/op_library.h"

namespace pto {
namespace {

class FakeProvider : public ConfigProvider {
 public:
  explicit FakeProvider(std::optional<TileConfig> answer, std::string source = "exact")
      : answer_(std::move(answer)), source_(std::move(source)) {}
  std::optional<TileConfig> lookup(const Workload& w, const Target& t, std::string& source) override {
    ++calls;
    last_key = w.key();
    last_target = t.name;
    if (answer_) source = source_;
    return answer_;
  }
  int calls = 0;
  std::string last_key, last_target;

 private:
  std::optional<TileConfig> answer_;
  std::string source_;
};

const Target& npu() {
  static const Target t = load_target("ascend910b1");
  return t;
}

const Workload kMatmul = Workload::parse_key("matmul|256,256,256|fp16");

TEST(Jit, ExactHitIsCompiledWithTheTunedConfig) {
  const TileConfig tuned = TileConfig::parse(R"({"cube":{"m":[64,64],"k":[32,64],"n":[64,128]},"nbuffer":2})");
  FakeProvider provider(tuned, "exact");
  const JitResult r = jit_compile(kMatmul, npu(), &provider);
  EXPECT_EQ(provider.calls, 1);
  EXPECT_EQ(provider.last_key, kMatmul.key());
  EXPECT_EQ(provider.last_target, "ascend910b1");
  EXPECT_EQ(r.config_source, "exact");
  EXPECT_EQ(r.compiled.config.cube, tuned.cube);
  EXPECT_EQ(r.compiled.program.tasks.size(), 4u * 2u);
}

TEST(Jit, NearestHitKeepsItsSource) {
  FakeProvider provider(TileConfig::parse(R"({"cube":{"m":[128,128],"k":[64,256],"n":[128,128]}})"),
                        "nearest 512,512,512");
  EXPECT_EQ(jit_compile(kMatmul, npu(), &provider).config_source, "nearest 512,512,512");
}

TEST(Jit, InfeasibleHitFallsBackToTheDefault) {
  FakeProvider provider(TileConfig::parse(R"({"cube":{"m":[256,256],"k":[64,256],"n":[256,256]}})"));
  const JitResult r = jit_compile(kMatmul, npu(), &provider);
  EXPECT_EQ(r.config_source, "default");
  const TileConfig expected = default_config(kMatmul, build_graph(kMatmul), npu());
  EXPECT_EQ(r.compiled.config.cube, expected.cube);
}

TEST(Jit, MalformedHitFallsBackToTheDefault) {
  TileConfig bad;
  bad.fusion = std::vector<std::vector<int>>{{0}};  // an input, not a compute node
  FakeProvider provider(bad);
  EXPECT_EQ(jit_compile(kMatmul, npu(), &provider).config_source, "default");
}

TEST(Jit, NoHitOrNoProviderTakesTheDefault) {
  FakeProvider provider(std::nullopt);
  EXPECT_EQ(jit_compile(kMatmul, npu(), &provider).config_source, "default");
  EXPECT_EQ(provider.calls, 1);
  const JitResult r = jit_compile(Workload::parse_key("softmax|64,128|fp16"), npu(), nullptr);
  EXPECT_EQ(r.config_source, "default");
  EXPECT_FALSE(r.compiled.program.tasks.empty());
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

}  // namespace
}  // namespace pto
