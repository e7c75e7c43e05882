// evolve's knob neighbours on flash_attention's axes: a step changes one knob or two,
// never none and never more, both ways, and the Cube's M (c1's and c2's at once) is one
// step away, where the next index of the stages list only ever moved v2's rows.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "core/target.h"
#include "core/workload.h"
#include "search/space_generator.h"
#include "search/strategies/knob_neighbours.h"

namespace pto::search {
namespace {

size_t knobs_changed(const std::vector<int64_t>& a, const std::vector<int64_t>& b) {
  size_t n = 0;
  for (size_t i = 0; i < a.size(); ++i) n += a[i] != b[i];
  return n;
}

template <typename Choice>
std::vector<std::vector<int64_t>> table(const std::vector<Choice>& choices) {
  std::vector<std::vector<int64_t>> t;
  for (const Choice& c : choices) t.push_back(knobs_of(c));
  return t;
}

TEST(KnobNeighbours, AStepChangesOneOrTwoKnobsBothWays) {
  const Workload w = Workload::parse_key("flash_attention|1,32,2048,2048,128|fp16|causal=1");
  const SpaceGenerator space = SpaceGenerator::for_workload(w, load_target("ascend910b1"));
  for (const auto& knobs : {table(space.axes().attention), table(space.axes().stages)}) {
    ASSERT_GT(knobs.size(), 10u);
    const std::vector<std::vector<uint32_t>> near = knob_neighbours(knobs);
    ASSERT_EQ(near.size(), knobs.size());
    for (size_t i = 0; i < knobs.size(); ++i) {
      EXPECT_FALSE(near[i].empty()) << i;
      for (uint32_t j : near[i]) {
        const size_t n = knobs_changed(knobs[i], knobs[j]);
        EXPECT_TRUE(n == 1 || n == 2) << i << " -> " << j << ": " << n << " knobs";
        EXPECT_NE(std::find(near[j].begin(), near[j].end(), i), near[j].end()) << j << " does not lead back to " << i;
      }
    }
  }
}

TEST(KnobNeighbours, TheCubesSharedMIsOneStepAway) {
  const Workload w = Workload::parse_key("flash_attention|1,32,2048,2048,128|fp16");
  const SpaceGenerator space = SpaceGenerator::for_workload(w, load_target("ascend910b1"));
  const auto& stages = space.axes().stages;
  const std::vector<std::vector<uint32_t>> near = knob_neighbours(table(stages));
  std::mt19937 rng(7);
  int checked = 0;
  for (int trial = 0; trial < 200; ++trial) {
    const size_t i = rng() % stages.size();
    auto other = stages[i];
    if (!other.count("c1") || !other.count("c2")) continue;
    const int64_t m = other["c1"].cube->mL0 == 128 ? 64 : 128;
    for (const char* stage : {"c1", "c2"}) other[stage].cube->mL0 = other[stage].cube->mL1 = m;
    const auto j = std::find(stages.begin(), stages.end(), other);
    if (j == stages.end()) continue;
    ++checked;
    EXPECT_NE(std::find(near[i].begin(), near[i].end(), static_cast<uint32_t>(j - stages.begin())), near[i].end());
  }
  EXPECT_GT(checked, 50);
}

TEST(KnobNeighbours, ChoicesWithoutKnobsHaveNoNeighbours) {
  EXPECT_TRUE(knobs_of(std::optional<AttentionTiles>{}).empty());
  const std::vector<std::vector<uint32_t>> near = knob_neighbours({{}, {1, 2}, {1, 3}, {1, 2, 3}});
  EXPECT_TRUE(near[0].empty());
  EXPECT_EQ(near[1], std::vector<uint32_t>{2});
  EXPECT_TRUE(near[3].empty());
}

}  // namespace
}  // namespace pto::search
