// Knob steps, as properties over random candidates of several spaces (Cube, vector and
// flash_attention workloads on ascend910b1): a step moves one axis's choice only, one or two of
// its knobs the same way, to the nearest such choice; each set of knobs and direction
// gives one step; the K at L1 of a Cube tile (kAL1 and kBL1 together) is one step away;
// a config on no axis has none. SpaceDigits round-trips index_of's indices.
#include "search/strategies/knob_steps.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <set>

#include "core/workload.h"
#include "search/strategies/knob_neighbours.h"
#include "tests/builtin_targets.h"

namespace pto::search {
namespace {

using pto::testing::npu;

const std::vector<std::string> kWorkloads = {"batch_matmul|8,8192,1024,1024|fp16", "matmul|200,300,250|fp16",
                                             "softmax|64,512|fp16", "flash_attention|1,2,40,100,32|fp16|causal=1"};

double distance(const std::vector<int64_t>& a, const std::vector<int64_t>& b) {
  double d = 0;
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i] != b[i])
      d += a[i] > 0 && b[i] > 0 ? std::abs(std::log(static_cast<double>(b[i]) / static_cast<double>(a[i])))
                                : static_cast<double>(std::abs(b[i] - a[i]));
  return d;
}

TEST(SpaceDigits, RoundTripsTheIndicesIndexOfGives) {
  for (const std::string& key : kWorkloads) {
    const SpaceGenerator space = SpaceGenerator::for_workload(Workload::parse_key(key), npu());
    const SpaceDigits digits(space);
    std::mt19937_64 rng(3);
    for (int trial = 0; trial < 200; ++trial) {
      // index_of names a choice listed twice on an axis by its first place, so the
      // round trip is from index_of's index, not from any index.
      const std::optional<uint64_t> index = space.index_of(space.at(rng() % space.size()));
      ASSERT_TRUE(index) << key;
      const std::optional<Digits> d = digits.of(space.at(*index));
      ASSERT_TRUE(d) << key << " " << *index;
      for (size_t axis = 0; axis < kAxes; ++axis) EXPECT_LT((*d)[axis], digits.radix()[axis]) << key;
      EXPECT_EQ(space.index_of(digits.at(*d)), index) << key;
    }
  }
}

TEST(KnobSteps, AStepMovesOneAxisToTheNearestChoiceOfItsKind) {
  for (const std::string& key : kWorkloads) {
    const SpaceGenerator space = SpaceGenerator::for_workload(Workload::parse_key(key), npu());
    const SpaceDigits digits(space);
    std::mt19937_64 rng(5);
    size_t steps_seen = 0;
    for (int trial = 0; trial < 40; ++trial) {
      const TileConfig from = space.at(rng() % space.size());
      const Digits at = *digits.of(from);
      std::set<std::tuple<size_t, std::vector<size_t>, bool>> kinds;
      for (const KnobStep& step : knob_steps(digits, from)) {
        ++steps_seen;
        // One axis moved in the digits (at() may normalise a coupled axis: an attention
        // choice without preload runs single-buffered), to a point index_of tells apart.
        Digits to = at;
        to[step.axis] = step.choice;
        ASSERT_EQ(step.config, digits.at(to)) << key;
        ASSERT_NE(step.choice, at[step.axis]);
        EXPECT_NE(digits.of(step.config), at) << key << ": a step to the config itself";
        EXPECT_TRUE(kinds.emplace(step.axis, step.knobs, step.up).second) << key << ": two steps of one kind";

        const std::vector<std::vector<int64_t>> table = knob_table(space.axes(), step.axis);
        const std::vector<int64_t>& own = table[at[step.axis]];
        const std::vector<int64_t>& moved = table[step.choice];
        ASSERT_TRUE(step.knobs.size() == 1 || step.knobs.size() == 2);
        for (size_t i = 0; i < own.size(); ++i) {
          const bool listed = std::find(step.knobs.begin(), step.knobs.end(), i) != step.knobs.end();
          EXPECT_EQ(own[i] != moved[i], listed) << key << " knob " << i;
          if (listed) {
            EXPECT_EQ(moved[i] > own[i], step.up) << key << " knob " << i;
          }
        }
        // No choice of the same kind lies nearer.
        for (const std::vector<int64_t>& other : table) {
          if (other.size() != own.size() || other == own) continue;
          bool same_kind = true;
          for (size_t i = 0; i < own.size() && same_kind; ++i) {
            const bool listed = std::find(step.knobs.begin(), step.knobs.end(), i) != step.knobs.end();
            same_kind = listed ? other[i] != own[i] && (other[i] > own[i]) == step.up : other[i] == own[i];
          }
          if (same_kind) {
            EXPECT_GE(distance(own, other), distance(own, moved)) << key;
          }
        }
      }
    }
    EXPECT_GT(steps_seen, 40u) << key << ": too few steps for the test to show anything";
  }
}

TEST(KnobSteps, TheCubesKAtL1IsOneStep) {
  const SpaceGenerator space =
      SpaceGenerator::for_workload(Workload::parse_key("batch_matmul|8,8192,1024,1024|fp16"), npu());
  TileConfig from;
  from.cube = CubeTile{128, 128, 64, 256, 256, 128, 256};
  from.l2_group = {{12, 2}};
  const std::vector<KnobStep> steps = knob_steps(SpaceDigits(space), from);
  ASSERT_FALSE(steps.empty()) << "the config is not in the space";
  bool found = false;
  for (const KnobStep& s : steps)
    found |= s.config.cube && s.config.cube->kAL1 == 192 && s.config.cube->kBL1 == 192 && s.config.cube->kL0 == 64 &&
             s.config.cube->mL1 == 128 && s.config.cube->nL1 == 256 && s.config.l2_group == from.l2_group;
  EXPECT_TRUE(found) << "no step from K at L1 256 to 192";
}

TEST(KnobSteps, AConfigOnNoAxisHasNone) {
  const SpaceGenerator space = SpaceGenerator::for_workload(Workload::parse_key("matmul|200,300,250|fp16"), npu());
  TileConfig odd = space.baseline();
  odd.cube->mL0 = odd.cube->mL1 = 4112;  // beyond M: no candidate list holds it
  ASSERT_FALSE(space.index_of(odd).has_value()) << "the test needs a config off the axes";
  EXPECT_TRUE(knob_steps(SpaceDigits(space), odd).empty());
}

}  // namespace
}  // namespace pto::search
