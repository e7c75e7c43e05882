// Batch files: both formats give the same entries, ranges expand to every value they
// name (checked against a direct enumeration for random bounds), overrides and
// attributes land where they belong, bad entries are problems naming their line or
// index while good ones survive, and malformed files are usage errors.
#include "batch/batch_file.h"

#include <gtest/gtest.h>

#include <random>

#include "tests/core/error_testing.h"

namespace pto::batch {
namespace {

using testing::expect_error;

TEST(BatchFile, Pow2AndStepRangesMatchADirectEnumeration) {
  std::mt19937_64 rng(7);
  for (int trial = 0; trial < 200; ++trial) {
    const int64_t lo = std::uniform_int_distribution<int64_t>(1, 5000)(rng);
    const int64_t hi = lo + std::uniform_int_distribution<int64_t>(0, 9000)(rng);
    const int64_t step = std::uniform_int_distribution<int64_t>(1, 700)(rng);
    std::vector<int64_t> pow2, stepped;
    for (int64_t v = 1; v <= hi; v *= 2)
      if (v >= lo) pow2.push_back(v);
    for (int64_t v = lo; v <= hi; v += step) stepped.push_back(v);
    const std::string range = std::to_string(lo) + ".." + std::to_string(hi);
    if (pow2.empty()) expect_error([&] { expand_dim(range + ":pow2"); }, ErrorCategory::Usage, {"holds no value"});
    else EXPECT_EQ(expand_dim("M=" + range + ":pow2"), pow2) << range;
    EXPECT_EQ(expand_dim(range + ":step" + std::to_string(step)), stepped) << range << " step " << step;
  }
  EXPECT_EQ(expand_dim("1..8192:pow2").size(), 14u);
  EXPECT_EQ(expand_dim("16..4096:step16").size(), 256u);
}

TEST(BatchFile, PlainAndJsonFormatsGiveTheSameEntries) {
  const BatchFile plain = parse_batch(
      "# release list\n"
      "matmul M=16..64:step16,128,256 fp16 transpose_b=1 budget=8 weight=2.5 backend=model\n"
      "\n"
      "softmax 1..4:pow2,512   # dtype from the target\n");
  const BatchFile json = parse_batch(
      R"([{"op":"matmul","shapes":["M=16..64:step16",128,256],"dtype":"fp16","attrs":{"transpose_b":1},
          "budget":8,"weight":2.5,"backend":"model"},
         {"op":"softmax","shapes":"1..4:pow2,512"}])");
  ASSERT_TRUE(plain.problems.empty()) << plain.problems[0].message;
  ASSERT_TRUE(json.problems.empty()) << json.problems[0].message;
  ASSERT_EQ(plain.entries.size(), 4u + 3u);
  ASSERT_EQ(json.entries.size(), plain.entries.size());
  for (size_t i = 0; i < plain.entries.size(); ++i) {
    const BatchEntry &a = plain.entries[i], &b = json.entries[i];
    EXPECT_EQ(a.workload.key(), b.workload.key());
    EXPECT_EQ(a.dtype_given, b.dtype_given);
    EXPECT_EQ(a.budget, b.budget);
    EXPECT_EQ(a.backend, b.backend);
    EXPECT_DOUBLE_EQ(a.weight, b.weight);
  }
  EXPECT_EQ(plain.entries[0].workload.shape, (Shape{16, 128, 256}));
  EXPECT_EQ(plain.entries[3].workload.shape, (Shape{64, 128, 256}));
  EXPECT_EQ(plain.entries[0].workload.attr("transpose_b"), 1);
  EXPECT_EQ(plain.entries[0].where, "line 2");
  EXPECT_EQ(json.entries[4].where, "entry 1");
  EXPECT_FALSE(plain.entries[4].dtype_given);
  EXPECT_EQ(plain.entries[6].workload.shape, (Shape{4, 512}));
}

TEST(BatchFile, BadEntriesAreProblemsNamingWhereAndTheRestSurvives) {
  const BatchFile plain = parse_batch(
      "matmul 64,64,64 fp16\n"
      "nosuchop 64,64\n"
      "matmul 1..0:pow2,64,64\n"
      "matmul 8..64:cube,64,64\n"
      "matmul 64,64,64 fp99\n"
      "matmul 64,x,64\n"
      "matmul 64,64,64 fp16 weight=-1\n"
      "softmax 64,512\n");
  EXPECT_EQ(plain.entries.size(), 2u);
  ASSERT_EQ(plain.problems.size(), 6u);
  const std::vector<std::pair<std::string, std::string>> expected = {
      {"line 2", "nosuchop"}, {"line 3", "1..0"}, {"line 4", "cube"},
      {"line 5", "fp99"},     {"line 6", "x"},    {"line 7", "weight"}};
  for (size_t i = 0; i < expected.size(); ++i) {
    EXPECT_EQ(plain.problems[i].where, expected[i].first);
    EXPECT_NE(plain.problems[i].message.find(expected[i].second), std::string::npos) << plain.problems[i].message;
  }
  const BatchFile json = parse_batch(R"([{"op":"matmul","shapes":"64,64,64"},{"op":"matmul"},{"op":"matmul","shapes":"8,8,8","colour":1}, 3])");
  EXPECT_EQ(json.entries.size(), 1u);
  ASSERT_EQ(json.problems.size(), 3u);
  EXPECT_EQ(json.problems[0].where, "entry 1");
  EXPECT_NE(json.problems[0].message.find("shapes"), std::string::npos);
  EXPECT_NE(json.problems[1].message.find("colour"), std::string::npos);
  EXPECT_EQ(json.problems[2].where, "entry 3");
}

// Found by tests/fuzz/batch_file_fuzz: the JSON form was parsed by the library
// directly, so a number past a double's range threw the library's out_of_range (exit 1,
// "[json.exception.out_of_range.406]"), and nesting had no bound.
TEST(BatchFile, JsonPastADoubleOrNestedTooDeepIsAUsageError) {
  expect_error([] { parse_batch(R"([{"op":"matmul","shapes":"64,64,64","weight":2e308}])", "w.json"); },
               ErrorCategory::Usage, {"w.json", "not valid JSON", "2e308"});
  expect_error([] { parse_batch("[" + std::string(100, '[') + std::string(101, ']'), "deep.json"); },
               ErrorCategory::Usage, {"deep.json", "deeper than 64 levels"});
}

TEST(BatchFile, MalformedFilesAreUsageErrors) {
  expect_error([] { parse_batch("[{\"op\": \"matmul\",", "f.json"); }, ErrorCategory::Usage, {"f.json", "not valid JSON"});
  expect_error([] { parse_batch("", "empty.txt"); }, ErrorCategory::Usage, {"empty.txt", "no entries"});
  expect_error([] { parse_batch("# only a comment\n\n", "c.txt"); }, ErrorCategory::Usage, {"no entries"});
  expect_error([] { parse_batch("[]", "e.json"); }, ErrorCategory::Usage, {"no entries"});
  expect_error([] { read_batch_file("/nonexistent/batch.txt"); }, ErrorCategory::Usage, {"/nonexistent/batch.txt"});
  expect_error([] { expand_dim("1..100"); }, ErrorCategory::Usage, {"1..100", "step"});
  expect_error([] { expand_dim("1..100000000:step1"); }, ErrorCategory::Usage, {"more than"});
  expect_error([] { expand_dim("0"); }, ErrorCategory::Usage, {"> 0"});
}

// Bounds hold before anything is built: ranges near 2^63 end (no overflow), products
// and batches past kMaxRangeValues are refused per entry, a weight must be finite.
TEST(BatchFile, HugeRangesProductsAndWeightsAreBoundedBeforeTheyAreBuilt) {
  const std::vector<int64_t> to_2_62 = expand_dim("1..4611686018427387904:pow2");
  ASSERT_EQ(to_2_62.size(), 63u);
  EXPECT_EQ(to_2_62.back(), int64_t{1} << 62);
  EXPECT_EQ(expand_dim("1..9223372036854775807:pow2").size(), 63u);
  const std::vector<int64_t> near_max = expand_dim("9223372036854775800..9223372036854775807:step5");
  EXPECT_EQ(near_max, (std::vector<int64_t>{9223372036854775800, 9223372036854775805}));
  const BatchFile product = parse_batch("matmul 1..100000:step1,1..100000:step1,64\nsoftmax 64,512\n");
  ASSERT_EQ(product.problems.size(), 1u);
  EXPECT_NE(product.problems[0].message.find("more than 100000 workloads"), std::string::npos);
  std::string many;
  for (int i = 0; i < 3; ++i) many += "add 1..40000:step1," + std::to_string(64 + i) + "\n";
  const BatchFile batch = parse_batch(many);
  EXPECT_EQ(batch.entries.size(), 80000u);
  ASSERT_EQ(batch.problems.size(), 1u) << "the third range would pass the batch's bound";
  EXPECT_EQ(batch.problems[0].where, "line 3");
  for (const char* weight : {"inf", "nan", "1e999"})
    EXPECT_EQ(parse_batch(std::string("matmul 64,64,64 weight=") + weight + "\nsoftmax 64,512\n").problems.size(), 1u)
        << weight;
}

// A caller's smaller bound (the fuzzer's) is checked by the same code, on a range and on
// the whole batch: the entries kept never pass it, and each refusal names it.
TEST(BatchFile, ASmallerBoundHoldsForRangesAndTheBatch) {
  expect_error([] { expand_dim("1..9:step1", 8); }, ErrorCategory::Usage, {"1..9:step1", "more than 8 values"});
  EXPECT_EQ(expand_dim("1..8:step1", 8).size(), 8u);
  const BatchFile batch = parse_batch("add 1..6:step1,64\nadd 1..3:step1,32\nadd 1..2:step1,32\n", "b.txt", 8);
  EXPECT_EQ(batch.entries.size(), 8u);
  ASSERT_EQ(batch.problems.size(), 1u);
  EXPECT_EQ(batch.problems[0].where, "line 2");
  EXPECT_NE(batch.problems[0].message.find("more than 8 workloads"), std::string::npos);
  const BatchFile product = parse_batch("matmul 1..3:step1,1..3:step1,64\n", "p.txt", 8);
  ASSERT_EQ(product.problems.size(), 1u);
  EXPECT_NE(product.problems[0].message.find("shapes expand to more than 8"), std::string::npos);
}

// Repeated entries tune once; a UTF-8 byte order mark is not part of the first op; a
// folder and an endless file are refused with a message naming them.
TEST(BatchFile, RepeatsBomFoldersAndEndlessFiles) {
  const BatchFile repeated = parse_batch("matmul 64,64,64 fp16\nmatmul 64,64,64 fp16\nmatmul 64,64,64 fp16 budget=3\n"
                                         "matmul 32..64:step32,64,64 fp16\n");
  EXPECT_EQ(repeated.entries.size(), 3u);  // 64,64,64; the same with budget 3; 32,64,64
  EXPECT_EQ(repeated.repeated, 2u);
  const BatchFile bom = parse_batch("\xEF\xBB\xBFmatmul 64,64,64\n");
  ASSERT_EQ(bom.entries.size(), 1u);
  EXPECT_EQ(bom.entries[0].workload.op, "matmul");
  expect_error([] { read_batch_file("/tmp"); }, ErrorCategory::Usage, {"/tmp", "folder"});
  expect_error([] { read_batch_file("/dev/zero"); }, ErrorCategory::Usage, {"/dev/zero", "larger than 64 MiB"});
}

}  // namespace
}  // namespace pto::batch
