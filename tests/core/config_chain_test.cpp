// ConfigChain with fake steps: the first step that answers wins, the op's default when
// none does, answers memoized (a fresh exact hit excepted) under a bound, and the same
// answers from many threads at once.
#include <atomic>
#include <memory>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "core/config_chain.h"
#include "core/op_library.h"
#include "tests/builtin_targets.h"

namespace pto {
namespace {

using testing::npu;

// Answers `source` with `config` for workloads of `op` (every op when empty), nothing
// otherwise; counts the questions.
class FakeStep : public ConfigProvider {
 public:
  FakeStep(ConfigSource source, std::string config, std::string op = {})
      : source_(source), config_(TileConfig::parse(config)), op_(std::move(op)) {}
  std::optional<ConfigChoice> lookup(const Workload& w, const Target&) override {
    ++asked;
    if (!op_.empty() && w.op != op_) return std::nullopt;
    return ConfigChoice{config_, source_, {}, false, {}};
  }
  std::atomic<int> asked = 0;

 private:
  ConfigSource source_;
  TileConfig config_;
  std::string op_;
};

const std::string kCube = R"({"cube":{"m":[64,64],"k":[32,64],"n":[64,128]}})";
const std::string kVec = R"({"vec":[8,128]})";
const Workload kMatmul = Workload::parse_key("matmul|256,256,256|fp16");
const Workload kSoftmax = Workload::parse_key("softmax|64,128|fp16");

TEST(ConfigChain, TheFirstStepThatAnswersWins) {
  auto matmuls = std::make_shared<FakeStep>(ConfigSource::Transfer, kCube, "matmul");
  auto any = std::make_shared<FakeStep>(ConfigSource::Model, kVec);
  ConfigChain chain({matmuls, any});
  const ConfigChoice m = chain.choose(kMatmul, npu());
  EXPECT_EQ(m.source, ConfigSource::Transfer);
  EXPECT_EQ(m.config, TileConfig::parse(kCube));
  EXPECT_EQ(any->asked, 0) << "a later step was asked although an earlier one answered";
  const ConfigChoice s = chain.choose(kSoftmax, npu());
  EXPECT_EQ(s.source, ConfigSource::Model);
  EXPECT_EQ(s.config, TileConfig::parse(kVec));
}

TEST(ConfigChain, WhenNoStepAnswersItIsTheOpsDefault) {
  for (const std::vector<std::shared_ptr<ConfigProvider>>& steps :
       {std::vector<std::shared_ptr<ConfigProvider>>{},
        std::vector<std::shared_ptr<ConfigProvider>>{std::make_shared<FakeStep>(ConfigSource::Exact, kCube, "gelu")}}) {
    ConfigChain chain(steps);
    const ConfigChoice c = chain.choose(kMatmul, npu());
    EXPECT_EQ(c.source, ConfigSource::Default);
    EXPECT_EQ(c.config, default_config(kMatmul, build_graph(kMatmul), npu()));
    EXPECT_EQ(chain.lookup(kMatmul, npu())->config, c.config) << "lookup() always answers";
  }
}

TEST(ConfigChain, AnswersAreMemoizedButAFreshExactHitIsNot) {
  auto exact = std::make_shared<FakeStep>(ConfigSource::Exact, kCube, "matmul");
  auto model = std::make_shared<FakeStep>(ConfigSource::Model, kVec);
  ConfigChain chain({exact, model});
  for (int twice = 0; twice < 2; ++twice) {
    EXPECT_EQ(chain.choose(kMatmul, npu()).source, ConfigSource::Exact);
    EXPECT_EQ(chain.choose(kSoftmax, npu()).source, ConfigSource::Model);
  }
  EXPECT_EQ(model->asked, 1) << "the model's answer was worked out twice";
  EXPECT_EQ(exact->asked, 3) << "matmul twice (not kept), softmax once";
  EXPECT_EQ(chain.memoized(), 1u);
}

// A JIT of dynamic shapes asks for ever new ones: the memo stays under its cap.
TEST(ConfigChain, TheMemoIsBounded) {
  ConfigChain chain({std::make_shared<FakeStep>(ConfigSource::Model, kCube)});
  size_t most = 0;
  for (int64_t n = 1; n <= int64_t(ConfigChain::kMaxMemoized) + 100; ++n) {
    chain.choose(Workload{"matmul", {64, 64, n}, DType::F16, {}}, npu());
    most = std::max(most, chain.memoized());
  }
  EXPECT_EQ(most, ConfigChain::kMaxMemoized);
  EXPECT_LT(chain.memoized(), ConfigChain::kMaxMemoized);
}

TEST(ConfigChain, ManyThreadsGetTheSameAnswersAsOne) {
  std::vector<Workload> asks;
  for (int64_t m : {64, 96, 128, 200}) asks.push_back(Workload{"matmul", {m, 256, 256}, DType::F16, {}});
  for (int64_t m : {8, 64, 100}) asks.push_back(Workload{"softmax", {m, 256}, DType::F16, {}});
  auto steps = [] {
    return std::vector<std::shared_ptr<ConfigProvider>>{std::make_shared<FakeStep>(ConfigSource::Nearest, kCube, "matmul")};
  };
  ConfigChain single(steps());
  std::vector<std::string> expected;
  for (const Workload& w : asks) expected.push_back(single.choose(w, npu()).describe() + single.choose(w, npu()).config.to_string());
  ConfigChain shared(steps());
  std::vector<int> mismatches(8, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      for (int round = 0; round < 50; ++round) {
        for (size_t i = 0; i < asks.size(); ++i) {
          const size_t k = (i + t + round) % asks.size();
          const ConfigChoice c = shared.choose(asks[k], npu());
          if (c.describe() + c.config.to_string() != expected[k]) ++mismatches[t];
        }
      }
    });
  }
  for (std::thread& th : threads) th.join();
  for (int m : mismatches) EXPECT_EQ(m, 0);
}

}  // namespace
}  // namespace pto
