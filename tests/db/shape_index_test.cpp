// ShapeIndex against a brute-force linear scan: for random sets of tuned shapes
// (random ranks, ragged dims, powers of two so that distances tie), random queries
// (tuned shapes among them) and random refusals, the index offers shapes in exactly the
// scan's order — by distance, ties to the smaller shape, never the wanted shape — and
// serves the first one accepted.
#include <algorithm>
#include <cmath>
#include <random>
#include <set>

#include <gtest/gtest.h>

#include "db/shape_index.h"
#include "tests/core/error_testing.h"

namespace pto::db {
namespace {

std::vector<double> log2_of(const Shape& s) {
  std::vector<double> out;
  for (int64_t d : s) out.push_back(std::log2(static_cast<double>(d)));
  return out;
}

// Every tuned shape but the wanted one, in the order a linear scan tries them.
std::vector<size_t> scan_order(const std::vector<Shape>& shapes, const Shape& wanted) {
  std::vector<std::pair<double, size_t>> by_distance;
  for (size_t i = 0; i < shapes.size(); ++i) {
    const double d = ShapeIndex::distance(log2_of(shapes[i]), log2_of(wanted));
    EXPECT_NEAR(ShapeIndex::distance(shapes[i], wanted), d, 1e-9);  // the same metric from dims
    if (d > 0) by_distance.emplace_back(d, i);
  }
  std::sort(by_distance.begin(), by_distance.end(), [&](const auto& a, const auto& b) {
    return a.first != b.first ? a.first < b.first : shapes[a.second] < shapes[b.second];
  });
  std::vector<size_t> order;
  for (const auto& [d, i] : by_distance) order.push_back(i);
  return order;
}

ShapeIndex index_of(const std::vector<Shape>& shapes) {
  std::vector<int64_t> dims;
  for (const Shape& s : shapes) dims.insert(dims.end(), s.begin(), s.end());
  return ShapeIndex(shapes.front().size(), dims);
}

int64_t random_dim(std::mt19937_64& rng) {
  switch (rng() % 3) {
    case 0: return int64_t{1} << (rng() % 15);          // powers of two: many equal distances
    case 1: return 16 * static_cast<int64_t>(1 + rng() % 64);
    default: return 1 + static_cast<int64_t>(rng() % 20000);  // ragged
  }
}

Shape random_shape(std::mt19937_64& rng, size_t rank) {
  Shape s(rank);
  for (int64_t& d : s) d = random_dim(rng);
  return s;
}

TEST(ShapeIndex, OffersShapesInTheLinearScansOrderAndServesTheFirstAccepted) {
  std::mt19937_64 rng(11);
  for (int trial = 0; trial < 300; ++trial) {
    const size_t rank = 1 + rng() % 4;
    const size_t count = 1 + rng() % (trial % 10 == 0 ? 3000 : 200);
    std::set<Shape> distinct;
    while (distinct.size() < count && distinct.size() < (rank == 1 ? 500u : count)) distinct.insert(random_shape(rng, rank));
    std::vector<Shape> shapes(distinct.begin(), distinct.end());
    std::shuffle(shapes.begin(), shapes.end(), rng);  // positions are not shape order
    const ShapeIndex index = index_of(shapes);
    for (int query = 0; query < 20; ++query) {
      const Shape wanted = query % 4 == 0 ? shapes[rng() % shapes.size()] : random_shape(rng, rank);
      // Refuse a random share of the shapes (all of them now and then): the
      // infeasible configs the walk must step over.
      const unsigned refuse_percent = query % 5 == 0 ? 100 : static_cast<unsigned>(rng() % 90);
      std::vector<bool> refused(shapes.size());
      for (size_t i = 0; i < shapes.size(); ++i) refused[i] = rng() % 100 < refuse_percent;
      std::vector<size_t> offered;
      const std::optional<size_t> served = index.nearest(wanted, [&](size_t i) {
        offered.push_back(i);
        return !refused[i];
      });
      const std::vector<size_t> expected = scan_order(shapes, wanted);
      const auto first = std::find_if(expected.begin(), expected.end(), [&](size_t i) { return !refused[i]; });
      const std::vector<size_t> expected_offered(expected.begin(), first == expected.end() ? first : first + 1);
      ASSERT_EQ(offered, expected_offered) << "trial " << trial << " query " << query;
      if (first == expected.end()) {
        EXPECT_FALSE(served);
      } else {
        ASSERT_TRUE(served);
        EXPECT_EQ(*served, *first);
      }
    }
  }
}

TEST(ShapeIndex, TiesGoToTheSmallerShape) {
  // 2 and 8 are both one octave from 4 in the first dim; the second dim ties too.
  const ShapeIndex index = index_of({{8, 4}, {2, 4}, {4, 8}, {4, 2}, {4, 4}});
  std::vector<size_t> offered;
  index.nearest({4, 4}, [&](size_t i) {
    offered.push_back(i);
    return false;
  });
  EXPECT_EQ(offered, (std::vector<size_t>{1, 3, 2, 0})) << "2,4 < 4,2 < 4,8 < 8,4; never 4,4 itself";
}

TEST(ShapeIndex, AnotherRankOrNoShapeFindsNothingAndRaggedDimsAreRefused) {
  EXPECT_FALSE(index_of({{16, 16}, {32, 32}}).nearest({16, 16, 16}, [](size_t) { return true; }));
  EXPECT_FALSE(ShapeIndex(2, {}).nearest({16, 16}, [](size_t) { return true; }));
  const std::vector<int64_t> five = {16, 16, 16, 16, 16};
  testing::expect_error([&] { ShapeIndex ragged(2, five); }, ErrorCategory::Internal, {"5 dims", "rank 2"});
}

}  // namespace
}  // namespace pto::db
