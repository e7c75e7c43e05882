// Tile candidates: the per-axis lists the space is made of — aligned Cube sizes with
// L1 a multiple of L0 that stop where the dim is covered, vector tiles with reduced dims
// whole, L2 groupings of one wave — checked over random shapes, and the extents read
// off the graphs of the op library.
#include "search/tile_candidates.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <map>
#include <set>

#include "core/op_library.h"

namespace pto::search {
namespace {

TEST(L0Sizes, PowersOfTwoOfTheAlignmentThenTheWholeDim) {
  EXPECT_EQ(l0_sizes(96, 16), (std::vector<int64_t>{16, 32, 64, 96}));
  EXPECT_EQ(l0_sizes(100, 16), (std::vector<int64_t>{16, 32, 64, 112}));
  EXPECT_EQ(l0_sizes(128, 16), (std::vector<int64_t>{16, 32, 64, 128}));
  EXPECT_EQ(l0_sizes(5, 32), (std::vector<int64_t>{32}));
}

TEST(L1Sizes, MultiplesOfL0UpToTheFirstThatCoversTheDim) {
  const int64_t factors[] = {1, 2, 3, 4};
  EXPECT_EQ(l1_sizes(64, 1024, 16, factors), (std::vector<int64_t>{64, 128, 192, 256}));
  EXPECT_EQ(l1_sizes(64, 150, 16, factors), (std::vector<int64_t>{64, 128, 192}));
  EXPECT_EQ(l1_sizes(160, 150, 16, factors), (std::vector<int64_t>{160}));
}

// Every tile of the Cube axes' product, in each K form.
std::vector<CubeTile> cube_tile_candidates(const MatmulExtents& e) {
  const CubeAxes axes = cube_axes(e);
  std::vector<CubeTile> tiles;
  for (const AxisTile& m : axes.m)
    for (const AxisTile& n : axes.n)
      for (const AxisTile& k : axes.k)
        for (const KTile& kt : k_tiles(k, axes.whole_k)) tiles.push_back(cube_tile(m, kt, n));
  return tiles;
}

int64_t tile_count(int64_t dim, int64_t size) { return (dim + size - 1) / size; }

TEST(BalancedSizes, TheSmallestAlignedSizeOfEachTileCount) {
  EXPECT_EQ(balanced_sizes(5, 16), (std::vector<int64_t>{16}));
  EXPECT_EQ(balanced_sizes(100, 16), (std::vector<int64_t>{16, 32, 48, 64, 112}));
  const std::vector<int64_t> n5120 = balanced_sizes(5120, 16);
  EXPECT_NE(std::find(n5120.begin(), n5120.end(), 224), n5120.end()) << "23 tiles: one wave of 24 cores";
  EXPECT_EQ(std::find(n5120.begin(), n5120.end(), 336), n5120.end()) << "the 16 tiles of 320, padded";
  // Random dims: every aligned size is dominated by a listed one of the same count that
  // is no larger, and every listed one is the smallest of its count.
  std::mt19937 rng(5);
  for (int trial = 0; trial < 200; ++trial) {
    const int64_t align = trial % 4 == 0 ? 32 : 16;
    const int64_t dim = std::uniform_int_distribution<int64_t>(1, 20000)(rng);
    const std::vector<int64_t> sizes = balanced_sizes(dim, align);
    ASSERT_TRUE(std::is_sorted(sizes.begin(), sizes.end()));
    std::map<int64_t, int64_t> by_count;
    for (int64_t s : sizes) {
      EXPECT_EQ(s % align, 0);
      EXPECT_TRUE(by_count.emplace(tile_count(dim, s), s).second) << "two sizes of one count";
      if (s > align) EXPECT_GT(tile_count(dim, s - align), tile_count(dim, s)) << dim << " " << s;
    }
    for (int64_t s = align; s < dim + align; s += align) {
      const auto it = by_count.find(tile_count(dim, s));
      ASSERT_NE(it, by_count.end()) << "dim " << dim << ": no listed size makes " << tile_count(dim, s) << " tiles";
      EXPECT_LE(it->second, s);
    }
  }
}

TEST(AxisTiles, HoldThePowersOfTwoAndTheBalancedSizesWithL0DividingL1) {
  const int64_t factors[] = {1, 2, 4};
  const std::vector<AxisTile> tiles = axis_tiles(5120, 16, factors);
  auto has = [&](int64_t l0, int64_t l1) {
    return std::find(tiles.begin(), tiles.end(), AxisTile{l0, l1}) != tiles.end();
  };
  EXPECT_TRUE(has(256, 256) && has(128, 512) && has(16, 64)) << "the guide's powers of two";
  EXPECT_TRUE(has(224, 224) && has(112, 224)) << "the wave-balanced 224 and its half";
  EXPECT_FALSE(has(56, 224)) << "a quarter of 224 is not aligned";
  EXPECT_TRUE(std::is_sorted(tiles.begin(), tiles.end()));
  EXPECT_EQ(std::adjacent_find(tiles.begin(), tiles.end()), tiles.end());
}

TEST(CubeTileCandidates, EveryTileIsAlignedNestedAndDistinctForRandomShapes) {
  std::mt19937 rng(11);
  std::uniform_int_distribution<int64_t> dim(1, 700);
  for (int trial = 0; trial < 40; ++trial) {
    const MatmulExtents e{dim(rng), dim(rng), dim(rng), trial % 5 == 0 ? 32 : 16};
    const std::vector<CubeTile> tiles = cube_tile_candidates(e);
    ASSERT_FALSE(tiles.empty());
    std::set<std::vector<int64_t>> seen;
    for (const CubeTile& t : tiles) {
      const std::vector<int64_t> sizes = {t.mL0, t.mL1, t.kL0, t.kAL1, t.kBL1, t.nL0, t.nL1};
      EXPECT_TRUE(seen.insert(sizes).second) << "repeated tile";
      for (int64_t s : sizes) EXPECT_EQ(s % e.align, 0) << s;
      EXPECT_EQ(t.mL1 % t.mL0, 0);
      EXPECT_EQ(t.nL1 % t.nL0, 0);
      const int64_t k_step = std::min(t.kAL1, t.kBL1);
      EXPECT_EQ(k_step % t.kL0, 0);
      EXPECT_LE(k_step / t.kL0, 4) << "kL1 is 1..4 x kL0";
      EXPECT_LE(t.mL1 / t.mL0, 4);
      EXPECT_LE(t.nL1 / t.nL0, 4);
      EXPECT_EQ(std::max(t.kAL1, t.kBL1) % k_step, 0) << "kAL1/kBL1";
      // Nothing past the size that covers the dim: larger ones clamp to the same tile.
      EXPECT_LE(t.mL0, align_up(e.m, e.align));
      EXPECT_LT(t.mL1 / 2, std::max(align_up(e.m, e.align), t.mL0));
      EXPECT_LT(t.nL1 / 2, std::max(align_up(e.n, e.align), t.nL0));
      EXPECT_EQ(t.k_short_form, t.kAL1 == t.kBL1);
    }
  }
}

TEST(CubeTileCandidates, HoldTheGuideTilesOnItsShapes) {
  // ascend-facts.md, "What users hand-pick today".
  auto has = [](const MatmulExtents& e, std::vector<int64_t> want) {
    const auto tiles = cube_tile_candidates(e);
    return std::any_of(tiles.begin(), tiles.end(), [&](const CubeTile& t) {
      return std::vector<int64_t>{t.mL0, t.mL1, t.kL0, t.kAL1, t.kBL1, t.nL0, t.nL1} == want;
    });
  };
  const MatmulExtents big{4096, 4096, 4096, 16};
  EXPECT_TRUE(has(big, {128, 128, 64, 256, 256, 256, 256}));
  EXPECT_TRUE(has(big, {256, 256, 64, 256, 256, 128, 128}));
  EXPECT_TRUE(has(big, {128, 128, 128, 512, 512, 128, 128}));
  const MatmulExtents decode{96, 3072, 1536, 16};
  EXPECT_TRUE(has(decode, {96, 96, 64, 256, 256, 128, 128}));
  EXPECT_TRUE(has(decode, {96, 96, 64, 1536, 256, 128, 128})) << "A resident in L1";
}

TEST(VecTileCandidates, ReducedDimsWholeOrInChunksSmallTilesDroppedLastDimAligned) {
  const VecExtents e{{6, 300, 1000}, {false, false, true}};
  const std::vector<Shape> tiles = vec_tile_candidates(e, 256);
  ASSERT_FALSE(tiles.empty());
  std::set<Shape> seen(tiles.begin(), tiles.end());
  EXPECT_EQ(seen.size(), tiles.size());
  for (const Shape& t : tiles) {
    ASSERT_EQ(t.size(), 3u);
    EXPECT_TRUE(t[2] == 1000 || t[2] == 512) << "the reduced dim is whole, or in chunks of 512 and up";
    EXPECT_TRUE(t[0] == 6 || (t[0] & (t[0] - 1)) == 0) << t[0];
    EXPECT_TRUE(t[1] == 300 || (t[1] & (t[1] - 1)) == 0) << t[1];
    EXPECT_GE(num_elements(t), 256);
  }
  EXPECT_TRUE(seen.count({6, 300, 1000}));
  EXPECT_TRUE(seen.count({1, 1, 1000}));
  EXPECT_TRUE(seen.count({6, 300, 512}));  // a split reduction
  const std::vector<Shape> wide = vec_tile_candidates({{4, 151936}, {false, true}}, 256);
  std::set<int64_t> chunks;
  for (const Shape& t : wide) chunks.insert(t[1]);
  EXPECT_EQ(chunks, (std::set<int64_t>{512, 1024, 2048, 4096, 8192, 16384, 32768, 65536, 131072, 151936}));

  const std::vector<Shape> flat = vec_tile_candidates({{64, 100}, {false, false}}, 256);
  for (const Shape& t : flat) EXPECT_TRUE(t[1] == 100 || t[1] % 16 == 0) << shape_str(t);
  EXPECT_EQ(vec_tile_candidates({{2, 8}, {false, false}}, 256), (std::vector<Shape>{{2, 8}}))
      << "the whole space is kept even when it is small";
}

TEST(L2GroupCandidates, OneWaveOfTheCoreGridEach) {
  for (int cores : {1, 20, 24, 32}) {
    const auto groups = l2_group_candidates(cores);
    ASSERT_FALSE(groups.empty());
    for (const auto& [m, n] : groups) EXPECT_EQ(m * n, cores);
  }
  const auto groups = l2_group_candidates(24);
  EXPECT_NE(std::find(groups.begin(), groups.end(), std::make_pair<int64_t, int64_t>(6, 4)), groups.end());
}

// Decode's tasks rarely fill whole waves (8 x 8 KV heads = 64 on 24 clusters): the space
// offers the smallest KV split that does (3: 192 tasks, 8 waves), and only such a one,
// where the tasks run in at most 8 waves.
TEST(AttentionTileCandidates, OfferTheSplitThatFillsWholeWaves) {
  std::mt19937 rng(5);
  for (int trial = 0; trial < 200; ++trial) {
    const int64_t heads = std::uniform_int_distribution<int64_t>(1, 128)(rng);
    const int clusters = std::uniform_int_distribution<int>(1, 40)(rng);
    const AttentionExtents e{4, 32768, 128, heads, false};  // one Q block of 4 rows per head
    std::set<int64_t> splits;
    for (const AttentionTiles& a : attention_tile_candidates(e, clusters)) splits.insert(a.kv_split);
    for (int64_t sp : splits) {
      const bool power_of_two = (sp & (sp - 1)) == 0;
      const bool whole_waves = heads * sp % clusters == 0;
      EXPECT_TRUE(sp == 1 || (power_of_two && heads < 2 * clusters) || whole_waves) << heads << " on " << clusters << ": " << sp;
    }
    int64_t fills = 0;  // the smallest split up to 16 that fills whole waves
    for (int64_t sp = 1; sp <= 16 && fills == 0; ++sp)
      if (heads * sp % clusters == 0) fills = sp;
    if (fills > 0 && heads <= 8 * clusters)
      EXPECT_TRUE(splits.count(fills)) << heads << " on " << clusters << ": no split of " << fills;
    if (heads > 8 * clusters) EXPECT_EQ(splits, (std::set<int64_t>{1})) << heads << " on " << clusters;
  }
  std::set<int64_t> decode;
  for (const AttentionTiles& a : attention_tile_candidates({4, 32768, 128, 64, false}, 24)) decode.insert(a.kv_split);
  EXPECT_EQ(decode, (std::set<int64_t>{1, 3}));
}

TEST(GraphExtents, ReadOffTheOpLibraryGraphs) {
  const TensorGraph attention = build_graph(Workload::parse_key("attention|2,3,40,24|fp16"));
  const auto mm = matmul_extents(attention);
  ASSERT_TRUE(mm);
  EXPECT_EQ(mm->m, 40);
  EXPECT_EQ(mm->n, 40) << "the larger N of q k^T (S) and p v (D)";
  EXPECT_EQ(mm->k, 40) << "the larger K of q k^T (D) and p v (S)";
  const auto vec = vec_extents(attention);
  ASSERT_TRUE(vec);
  EXPECT_EQ(vec->widest, (Shape{2, 3, 40, 40}));
  EXPECT_EQ(vec->reduced, (std::vector<bool>{false, false, false, true}));

  const auto int8 = matmul_extents(build_graph(Workload::parse_key("matmul|64,64,64|int8")));
  ASSERT_TRUE(int8);
  EXPECT_EQ(int8->align, 32);
  EXPECT_FALSE(vec_extents(build_graph(Workload::parse_key("matmul|64,64,64|fp16"))));
  EXPECT_FALSE(matmul_extents(build_graph(Workload::parse_key("softmax|64,64|fp16"))));
  EXPECT_EQ(vec_extents(build_graph(Workload::parse_key("softmax|64,80|fp16")))->reduced,
            (std::vector<bool>{false, true}));
}

}  // namespace
}  // namespace pto::search
