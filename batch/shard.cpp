#include "batch/shard.h"

#include <charconv>
#include <cstdlib>

#include "core/error.h"
#include "core/stable_hash.h"

namespace pto::batch {

namespace {

std::optional<uint64_t> env_number(const char* name) {
  const char* value = std::getenv(name);
  if (!value || !*value) return std::nullopt;
  uint64_t n = 0;
  const char* end = value + std::char_traits<char>::length(value);
  const auto [p, ec] = std::from_chars(value, end, n);
  if (ec != std::errc() || p != end) usage_error(std::string("$") + name + ": expected a number >= 0, got '" + value + "'");
  return n;
}

Shard checked(uint64_t index, uint64_t count, const std::string& what) {
  if (count == 0 || index >= count)
    usage_error(what + ": shard " + std::to_string(index) + " of " + std::to_string(count) + " is not 0 <= I < N");
  return {index, count};
}

}  // namespace

bool in_shard(const search::RecordKey& key, const Shard& shard) {
  return stable_hash(key.workload + '\n' + key.target_fingerprint + '\n' + key.backend) % shard.count == shard.index;
}

Shard parse_shard(const std::string& text, const std::string& flag) {
  const size_t slash = text.find('/');
  uint64_t index = 0, count = 0;
  const auto number = [&](const std::string& part, uint64_t& out) {
    const auto [p, ec] = std::from_chars(part.data(), part.data() + part.size(), out);
    return !part.empty() && ec == std::errc() && p == part.data() + part.size();
  };
  if (slash == std::string::npos || !number(text.substr(0, slash), index) || !number(text.substr(slash + 1), count))
    usage_error(flag + ": expected I/N (e.g. 0/4), got '" + text + "'");
  return checked(index, count, flag + " " + text);
}

std::optional<Shard> shard_from_env(std::optional<uint64_t> count) {
  if (const auto id = env_number("SLURM_ARRAY_TASK_ID")) {
    const auto slurm_count = env_number("SLURM_ARRAY_TASK_COUNT");
    const uint64_t n = count ? *count : slurm_count.value_or(0);
    const uint64_t first = env_number("SLURM_ARRAY_TASK_MIN").value_or(0);
    if (*id < first) usage_error("$SLURM_ARRAY_TASK_ID " + std::to_string(*id) + " is below $SLURM_ARRAY_TASK_MIN");
    return checked(*id - first, n, "$SLURM_ARRAY_TASK_ID/$SLURM_ARRAY_TASK_COUNT");
  }
  if (const auto index = env_number("JOB_COMPLETION_INDEX")) {
    const uint64_t n = count ? *count : env_number("PTO_TUNE_SHARD_COUNT").value_or(0);
    if (n == 0) usage_error("$JOB_COMPLETION_INDEX is set but no shard count: give --shard-count N or $PTO_TUNE_SHARD_COUNT");
    return checked(*index, n, "$JOB_COMPLETION_INDEX");
  }
  return std::nullopt;
}

}  // namespace pto::batch
