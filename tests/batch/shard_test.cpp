// Sharding: for random N and random reorderings of random workload lists, every
// workload lands in exactly one shard and in the same one whatever the order; the
// environment of Slurm arrays and Kubernetes Indexed Jobs names the shard.
#include "batch/shard.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <random>

#include "core/stable_hash.h"
#include "tests/core/error_testing.h"

namespace pto::batch {
namespace {

using testing::expect_error;
using search::RecordKey;

std::vector<RecordKey> random_keys(std::mt19937_64& rng, size_t n) {
  std::vector<RecordKey> keys;
  for (size_t i = 0; i < n; ++i) {
    const auto dim = [&] { return std::to_string(std::uniform_int_distribution<int>(1, 8192)(rng)); };
    keys.push_back({"matmul|" + dim() + "," + dim() + "," + dim() + "|fp16", rng() % 2 ? "aa11" : "bb22",
                    rng() % 2 ? "sim" : "model"});
  }
  return keys;
}

TEST(Shard, EveryWorkloadInExactlyOneShardWhateverTheOrder) {
  std::mt19937_64 rng(3);
  for (int trial = 0; trial < 50; ++trial) {
    std::vector<RecordKey> keys = random_keys(rng, 300);
    const uint64_t n = std::uniform_int_distribution<uint64_t>(1, 17)(rng);
    std::map<RecordKey, uint64_t> home;
    for (int order = 0; order < 3; ++order) {
      std::shuffle(keys.begin(), keys.end(), rng);
      std::map<RecordKey, int> times;
      for (uint64_t i = 0; i < n; ++i)
        for (const RecordKey& k : keys)
          if (in_shard(k, {i, n})) {
            ++times[k];
            if (order == 0) home[k] = i;
            else EXPECT_EQ(home[k], i) << k.workload << " moved shards when the list was reordered";
          }
      for (const RecordKey& k : keys) EXPECT_EQ(times[k], 1) << k.workload << " of " << n << " shards";
    }
  }
}

TEST(Shard, SharesAreRoughlyEven) {
  std::mt19937_64 rng(5);
  const std::vector<RecordKey> keys = random_keys(rng, 4000);
  std::vector<int> counts(8);
  for (const RecordKey& k : keys)
    for (uint64_t i = 0; i < 8; ++i) counts[i] += in_shard(k, {i, 8});
  for (int c : counts) EXPECT_GT(c, 4000 / 8 / 2);
}

TEST(Shard, HashIsStable) {
  EXPECT_EQ(stable_hash(""), 0xcbf29ce484222325ull);
  EXPECT_EQ(stable_hash("a"), 0xaf63dc4c8601ec8cull);  // FNV-1a 64 of "a"
}

TEST(Shard, ParseAndEnvironment) {
  EXPECT_EQ(parse_shard("2/5"), (Shard{2, 5}));
  for (const char* bad : {"5/5", "1", "a/2", "1/0", "-1/3", "1/2/3"})
    expect_error([&] { parse_shard(bad); }, ErrorCategory::Usage, {bad});
  expect_error([] { parse_shard("3/2", "--worker"); }, ErrorCategory::Usage, {"--worker 3/2"});
  ::unsetenv("SLURM_ARRAY_TASK_ID");
  ::unsetenv("JOB_COMPLETION_INDEX");
  EXPECT_EQ(shard_from_env(std::nullopt), std::nullopt);
  ::setenv("SLURM_ARRAY_TASK_ID", "4", 1);
  ::setenv("SLURM_ARRAY_TASK_COUNT", "6", 1);
  ::setenv("SLURM_ARRAY_TASK_MIN", "1", 1);
  EXPECT_EQ(shard_from_env(std::nullopt), (Shard{3, 6}));
  ::unsetenv("SLURM_ARRAY_TASK_ID");
  ::setenv("JOB_COMPLETION_INDEX", "2", 1);
  expect_error([] { shard_from_env(std::nullopt); }, ErrorCategory::Usage, {"shard count"});
  EXPECT_EQ(shard_from_env(4), (Shard{2, 4}));
  ::setenv("PTO_TUNE_SHARD_COUNT", "3", 1);
  EXPECT_EQ(shard_from_env(std::nullopt), (Shard{2, 3}));
  expect_error([] { shard_from_env(2); }, ErrorCategory::Usage, {"JOB_COMPLETION_INDEX"});
  for (const char* name : {"JOB_COMPLETION_INDEX", "PTO_TUNE_SHARD_COUNT", "SLURM_ARRAY_TASK_COUNT", "SLURM_ARRAY_TASK_MIN"})
    ::unsetenv(name);
}

}  // namespace
}  // namespace pto::batch
