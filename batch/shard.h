// Sharding a batch over a cluster's array jobs (Slurm arrays, Kubernetes Indexed Jobs)
// or local worker processes: shard I of N takes the workloads whose stable hash
// (core/stable_hash.h) of (workload key, target fingerprint, backend) is I modulo N.
// Every workload lands in exactly one shard for any N, and the split does not depend on
// the file's order, so array tasks need not coordinate and a reordered file tunes the
// same split.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "search/tuning_record.h"

namespace pto::batch {

struct Shard {
  uint64_t index = 0;
  uint64_t count = 1;  // 1: everything
  bool operator==(const Shard&) const = default;
};

bool in_shard(const search::RecordKey& key, const Shard& shard);

// "I/N" with 0 <= I < N; usage Error naming the text otherwise.
Shard parse_shard(const std::string& text, const std::string& flag = "--shard");  // `flag` names it in errors

// The shard the environment names: SLURM_ARRAY_TASK_ID (minus SLURM_ARRAY_TASK_MIN
// when set) of SLURM_ARRAY_TASK_COUNT, else Kubernetes' JOB_COMPLETION_INDEX of
// `count` (--shard-count, else $PTO_TUNE_SHARD_COUNT). nullopt when none is set; usage
// Error for a value that is not a valid shard.
std::optional<Shard> shard_from_env(std::optional<uint64_t> count);

}  // namespace pto::batch
