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
    EXPECT_EQ(all.find("n-buffer depth: ") != std::string::npos, t.nbuffer.has_value()) << all;
    EXPECT_EQ(all.find("L2 grouping: ") != std::string::npos, t.l2_group.has_value()) << all;
    EXPECT_EQ(all.find("# fusion: [[0,1],[2]]") != std::string::npos, t.fusion.has_value()) << all;
  }
}

TEST(PyptoCalls, TheGuideConfigAsTheGuideWritesIt) {
  const TileConfig t = TileConfig::parse(R"({"cube":{"m":[128,128],"k":[64,256],"n":[256,256]}})");
  EXPECT_EQ(pypto_snippet(t, "  "), "  pypto.set_cube_tile_shapes([128,128],[64,256],[256,256])");
  EXPECT_EQ(pypto_snippet(TileConfig::parse(R"({"vec":[8,8]})")), "pypto.set_vec_tile_shapes(8,8)");
}

TEST(PyptoCalls, AnEmptyConfigSaysSo) {
  ASSERT_EQ(pypto_calls(TileConfig{}).size(), 1u);
  EXPECT_TRUE(pypto_calls(TileConfig{}).front().starts_with("# "));
}

}  // namespace
}  // namespace pto
