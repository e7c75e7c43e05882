// The PyPTO calls a user pastes: for random configs, reading the numbers back out of
// the lines gives the config again, and the lines are valid Python (calls or comments).
#include "core/pypto_calls.h"

#include <random>
#include <regex>

#include <gtest/gtest.h>

namespace pto {
namespace {

std::vector<int64_t> numbers(const std::string& text) {
  std::vector<int64_t> out;
  static const std::regex number("[0-9]+");
  for (auto it = std::sregex_iterator(text.begin(), text.end(), number); it != std::sregex_iterator(); ++it)
    out.push_back(std::stoll(it->str()));
  return out;
}

int64_t pick(std::mt19937& rng, std::initializer_list<int64_t> values) { return *(values.begin() + rng() % values.size()); }

TileConfig random_config(std::mt19937& rng) {
  TileConfig t;
  if (rng() % 2) {
    CubeTile c;
    c.mL0 = pick(rng, {16, 32, 96, 128});
    c.mL1 = c.mL0 * pick(rng, {1, 2});
    c.kL0 = pick(rng, {16, 64});
    c.kAL1 = c.kL0 * pick(rng, {1, 4});
    c.kBL1 = rng() % 3 ? c.kAL1 : c.kL0 * 24;
    c.nL0 = pick(rng, {16, 256});
    c.nL1 = c.nL0 * pick(rng, {1, 2});
    c.split_k = rng() % 4 == 0;
    t.cube = c;
  }
  if (rng() % 2) {
    Shape vec;
    for (int64_t d = pick(rng, {1, 2, 3, 4}); d > 0; --d) vec.push_back(pick(rng, {1, 8, 64, 512}));
    t.vec = vec;
  }
  if (rng() % 2) t.nbuffer = static_cast<int>(pick(rng, {1, 2, 3}));
  if (rng() % 2) t.l2_group = std::make_pair(pick(rng, {1, 6}), pick(rng, {2, 4}));
  if (rng() % 2) t.fusion = std::vector<std::vector<int>>{{0, 1}, {2}};
  return t;
}

TEST(PyptoCalls, NumbersReadBackGiveTheConfig) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 500; ++trial) {
    const TileConfig t = random_config(rng);
    const std::vector<std::string> lines = pypto_calls(t);
    size_t next = 0;
    if (t.cube) {
      const CubeTile& c = *t.cube;
      ASSERT_TRUE(lines.at(next).starts_with("pypto.set_cube_tile_shapes(")) << lines[next];
      std::vector<int64_t> want = {c.mL0, c.mL1, c.kL0, c.kAL1};
      if (c.kBL1 != c.kAL1) want.push_back(c.kBL1);
      want.insert(want.end(), {c.nL0, c.nL1});
      EXPECT_EQ(numbers(lines[next]), want) << lines[next];
      EXPECT_EQ(lines[next].find("enable_split_k=True") != std::string::npos, c.split_k) << lines[next];
      ++next;
    }
    if (t.vec) {
      ASSERT_TRUE(lines.at(next).starts_with("pypto.set_vec_tile_shapes(")) << lines[next];
      EXPECT_EQ(numbers(lines[next]), *t.vec) << lines[next];
      ++next;
    }
    for (; next < lines.size(); ++next) EXPECT_TRUE(lines[next].starts_with("# ")) << lines[next];
    const std::string all = pypto_snippet(t);
    EXPECT_EQ(all.find("# n-buffer depth ") != std::string::npos, t.nbuffer.has_value()) << all;
    EXPECT_EQ(all.find("# L2 grouping ") != std::string::npos, t.l2_group.has_value()) << all;
    EXPECT_EQ(all.find("# fusion [[0,1],[2]]") != std::string::npos, t.fusion.has_value()) << all;
  }
}

// flash_attention's per-stage tile sets: each stage's setters after its "# stage" line,
// the stages in run order whatever subset is set, and the loop's blocks read back.
TEST(PyptoCalls, StagesInRunOrderEachWithItsSetters) {
  std::mt19937 rng(11);
  for (int trial = 0; trial < 200; ++trial) {
    TileConfig t;
    t.attention = AttentionTiles{pick(rng, {16, 128}), pick(rng, {64, 512}), pick(rng, {1, 4}), TaskOrder::Qbh};
    for (const char* name : {"v2", "c2", "v1", "c1"}) {
      if (rng() % 4 == 0) continue;
      const TileConfig one = random_config(rng);
      if (name[0] == 'c') t.stages[name].cube = one.cube.value_or(CubeTile{16, 32, 16, 32, 32, 16, 32});
      if (name[0] == 'v') t.stages[name].vec = one.vec.value_or(Shape{8, 64});
    }
    const std::vector<std::string> lines = pypto_calls(t);
    ASSERT_FALSE(lines.empty());
    EXPECT_EQ(numbers(lines[0]), (std::vector<int64_t>{t.attention->q_tile, t.attention->kv_tile, t.attention->kv_split}))
        << lines[0];
    EXPECT_NE(lines[0].find("order=qbh"), std::string::npos) << lines[0];
    std::vector<std::string> seen;
    for (size_t i = 1; i < lines.size(); ++i) {
      if (!lines[i].starts_with("# stage ")) continue;
      const std::string name = lines[i].substr(8, 2);
      seen.push_back(name);
      const StageTiles& st = t.stages.at(name);
      ASSERT_LT(i + 1, lines.size());
      const std::string& call = lines[i + 1];
      if (st.cube) {
        EXPECT_TRUE(call.starts_with("pypto.set_cube_tile_shapes(")) << call;
        EXPECT_EQ(numbers(call).front(), st.cube->mL0) << call;
      } else {
        EXPECT_TRUE(call.starts_with("pypto.set_vec_tile_shapes(")) << call;
        EXPECT_EQ(numbers(call), *st.vec) << call;
      }
    }
    std::vector<std::string> want;
    for (const char* name : {"c1", "v1", "c2", "v2"})
      if (t.stages.count(name)) want.push_back(name);
    EXPECT_EQ(seen, want);
  }
}

TEST(PyptoCalls, TheGuideConfigAsTheGuideWritesIt) {
  const TileConfig t = TileConfig::parse(R"({"cube":{"m":[128,128],"k":[64,256],"n":[256,256]}})");
  EXPECT_EQ(pypto_snippet(t, "  "), "  pypto.set_cube_tile_shapes([128,128],[64,256],[256,256])");
  EXPECT_EQ(pypto_snippet(TileConfig::parse(R"({"vec":[8,8]})")), "pypto.set_vec_tile_shapes(8,8)");
}

// PyPTO has no buffer-depth setter: an op's nbuffer is said to be pto-tune's own, while
// flash_attention's depths are its kernel's arguments (the preload its own, or nbuffer - 1).
TEST(PyptoCalls, NbufferIsNeverASetter) {
  EXPECT_EQ(pypto_snippet(TileConfig::parse(R"({"vec":[8,8],"nbuffer":2})")),
            "pypto.set_vec_tile_shapes(8,8)\n"
            "# n-buffer depth 2: pto-tune only, PyPTO has no such setter (its compiler double-buffers by itself)");
  TileConfig attention;
  attention.attention = AttentionTiles{128, 256, 1, TaskOrder::Bhq, std::nullopt};
  attention.nbuffer = 3;
  EXPECT_EQ(pypto_calls(attention).back(),
            "# n-buffer depth 3, QK preload 2: the kernel's L1/UB buffer depth and how many KV blocks its QK runs "
            "ahead of PV, kernel arguments");
  attention.nbuffer.reset();
  attention.attention->preload = 4;
  EXPECT_EQ(pypto_calls(attention).back().substr(0, 34), "# n-buffer depth 1, QK preload 4: ");
}

// The L2 grouping and the fusion groups say which PyPTO structure expresses them.
TEST(PyptoCalls, KernelStructureIsNamedInPyptoTerms) {
  const std::string all = pypto_snippet(TileConfig::parse(R"({"vec":[8,8],"l2_group":[6,4],"fusion":[[3],[4,5]]})"));
  EXPECT_NE(all.find("m_view = mL1*6, n_view = nL1*4"), std::string::npos) << all;
  EXPECT_NE(all.find("device_sched_mode=1"), std::string::npos) << all;
  EXPECT_NE(all.find("sg_set_scope=g"), std::string::npos) << all;
}

TEST(PyptoCalls, StagesAreInKernelOrderAndAnOpsOwnTilesAreOneStage) {
  std::vector<std::string> names;
  TileConfig t = TileConfig::parse(R"({"stages":{"v2":{"vec":[8]},"c1":{"cube":{"m":[16,16],"k":[16,16],"n":[16,16]}},"v1":{"vec":[8]}}})");
  for (const auto& [name, tiles] : pypto_stages(t)) names.push_back(name);
  EXPECT_EQ(names, (std::vector<std::string>{"c1", "v1", "v2"}));
  const auto one = pypto_stages(TileConfig::parse(R"({"vec":[8,8],"nbuffer":2})"));
  ASSERT_EQ(one.size(), 1u);
  EXPECT_EQ(one[0].first, kSingleStage);
  EXPECT_EQ(one[0].second.vec, (Shape{8, 8}));
  EXPECT_TRUE(pypto_stages(TileConfig::parse(R"({"nbuffer":2})")).empty());
}

TEST(PyptoCalls, AnEmptyConfigSaysSo) {
  ASSERT_EQ(pypto_calls(TileConfig{}).size(), 1u);
  EXPECT_TRUE(pypto_calls(TileConfig{}).front().starts_with("# "));
}

}  // namespace
}  // namespace pto
