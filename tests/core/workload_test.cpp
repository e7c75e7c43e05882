// Workload keys: random workloads round-trip through key()/parse_key(), the key is
// canonical (attributes sorted), and the shape/attribute parsers name the bad token.
#include "core/workload.h"

#include <random>

#include <gtest/gtest.h>

#include "tests/core/error_testing.h"

namespace pto {
namespace {

using testing::expect_error;

std::string random_identifier(std::mt19937_64& rng) {
  static const std::string first = "abcdefghijklmnopqrstuvwxyz_";
  static const std::string rest = first + "0123456789";
  std::string s(1, first[rng() % first.size()]);
  for (int n = static_cast<int>(rng() % 10); n > 0; --n) s += rest[rng() % rest.size()];
  return s;
}

Workload random_workload(std::mt19937_64& rng) {
  const DType dtypes[] = {DType::F32, DType::F16, DType::BF16, DType::I32, DType::I8, DType::Bool};
  Workload w;
  w.op = random_identifier(rng);
  w.shape = Shape(1 + rng() % 5);
  for (auto& d : w.shape) d = 1 + static_cast<int64_t>(rng() % 100000);
  w.dtype = dtypes[rng() % std::size(dtypes)];
  for (int n = static_cast<int>(rng() % 4); n > 0; --n) {
    w.attrs[random_identifier(rng)] = static_cast<int64_t>(rng() % 2001) - 1000;
  }
  return w;
}

TEST(Workload, RandomWorkloadsRoundTripThroughTheKey) {
  std::mt19937_64 rng(11);
  for (int i = 0; i < 2000; ++i) {
    const Workload w = random_workload(rng);
    const Workload back = Workload::parse_key(w.key());
    EXPECT_EQ(back.op, w.op);
    EXPECT_EQ(back.shape, w.shape);
    EXPECT_EQ(back.dtype, w.dtype);
    EXPECT_EQ(back.attrs, w.attrs);
    EXPECT_EQ(back.key(), w.key());
  }
}

TEST(Workload, KeyIsCanonical) {
  Workload w{"matmul", {4096, 4096, 4096}, DType::F16, {{"transpose_b", 1}}};
  EXPECT_EQ(w.key(), "matmul|4096,4096,4096|fp16|transpose_b=1");
  w.attrs = {{"z", 1}, {"a", 0}};
  EXPECT_EQ(w.key(), "matmul|4096,4096,4096|fp16|a=0,z=1");
  w.attrs.clear();
  EXPECT_EQ(w.key(), "matmul|4096,4096,4096|fp16");
  // Non-canonical spellings parse to the canonical key.
  EXPECT_EQ(Workload::parse_key("matmul|4096x4096x4096|fp16|").key(), "matmul|4096,4096,4096|fp16");
  EXPECT_EQ(Workload::parse_key("softmax|8,128|fp32|causal=1,axis=-1").key(), "softmax|8,128|fp32|axis=-1,causal=1");
}

TEST(Workload, AttrFallsBackWhenAbsent) {
  const Workload w = Workload::parse_key("attention|1,8,128,64|fp16|causal=1");
  EXPECT_EQ(w.attr("causal"), 1);
  EXPECT_EQ(w.attr("transpose_b"), 0);
  EXPECT_EQ(w.attr("transpose_b", 7), 7);
}

TEST(Workload, ShapeListsAcceptCommasAndXs) {
  EXPECT_EQ(parse_shape_list("4096,4096,4096"), (Shape{4096, 4096, 4096}));
  EXPECT_EQ(parse_shape_list("2x3x5"), (Shape{2, 3, 5}));
  EXPECT_EQ(parse_shape_list("7"), Shape{7});
  EXPECT_EQ(parse_shape_list("9223372036854775807"), Shape{INT64_MAX});
}

TEST(Workload, BadShapesNameTheToken) {
  const struct {
    const char* text;
    const char* token;
  } cases[] = {
      {"", "''"},
      {"4096,,4096", "an empty size"},
      {"4096,abc", "'abc' is not a positive integer"},
      {"64,0", "'0' is not a positive integer"},
      {"64,-1", "'-1'"},
      {"1.5", "'1.5'"},
      {"4096 ,4096", "'4096 '"},
      {"99999999999999999999", "'99999999999999999999'"},
      {"4096,", "an empty size"},
      {"64,x,64", "an empty size"},
  };
  for (const auto& c : cases) {
    expect_error([&] { parse_shape_list(c.text); }, ErrorCategory::Usage, {c.token}, c.text);
  }
}

TEST(Workload, AttributesParseAndBadOnesNameTheToken) {
  EXPECT_TRUE(parse_attrs("").empty());
  EXPECT_EQ(parse_attrs("causal=1,transpose_b=0"),
            (std::map<std::string, int64_t>{{"causal", 1}, {"transpose_b", 0}}));
  EXPECT_EQ(parse_attrs("axis=-2").at("axis"), -2);
  for (const char* bad : {"causal", "causal=", "=1", "causal=x", "1a=1", "causal=1,", "causal=1.5", "a b=1"}) {
    expect_error([&] { parse_attrs(bad); }, ErrorCategory::Usage, {"bad attribute", bad}, bad);
  }
  expect_error([] { parse_attrs("causal=1,causal=0"); }, ErrorCategory::Usage, {"'causal' is given twice"});
}

TEST(Workload, BadKeysAreUsageErrorsNamingThePart) {
  const struct {
    const char* key;
    std::vector<std::string_view> parts;
  } cases[] = {
      {"matmul", {"'matmul'", "op|shape|dtype"}},
      {"matmul|4096", {"op|shape|dtype"}},
      {"a|1|fp16|x=1|y", {"op|shape|dtype"}},
      {"|4096|fp16", {"bad op name ''"}},
      {"mat mul|4096|fp16", {"bad op name 'mat mul'"}},
      {"matmul|4096,x|fp16", {"bad shape"}},
      {"matmul|4096|fp99", {"fp99"}},
      {"matmul|4096|fp16|causal", {"bad attribute 'causal'"}},
  };
  for (const auto& c : cases) {
    expect_error([&] { Workload::parse_key(c.key); }, ErrorCategory::Usage, c.parts, c.key);
  }
}

}  // namespace
}  // namespace pto
