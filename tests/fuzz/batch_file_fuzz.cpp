// Fuzzes batch::parse_batch, the reader of `pto-tune batch` files (JSON list or plain
// lines): any text is a batch or a usage error; the entries it keeps are within the
// bound on a batch, each with a workload key that round-trips, a finite positive
// weight and a budget >= 0; each bad entry is a problem naming where it is. Ranges
// near 2^63, huge products and long files must neither hang nor grow without bound
// (-timeout and -rss_limit_mb of libFuzzer catch both).
//
// The batch bound here is kFuzzBound, not the CLI's 100,000: the code that checks the
// bound is the same, but an input that reaches it now costs a few hundred workloads,
// not 100,000 (0.2-1 s each under ASan), so a run spends its time on new inputs.
#include <cmath>

#include "core/warning.h"
#include "batch/batch_file.h"
#include "tests/fuzz/fuzz_check.h"

namespace {

constexpr size_t kFuzzBound = 256;

void check_entry(const pto::batch::BatchEntry& e) {
  const std::string key = e.workload.key();
  if (pto::Workload::parse_key(key).key() != key) pto::fuzz::broken("entry key round trip: " + key);
  if (!(std::isfinite(e.weight) && e.weight > 0)) pto::fuzz::broken("weight kept: " + std::to_string(e.weight));
  if (e.budget && *e.budget < 0) pto::fuzz::broken("negative budget kept at " + e.where);
  if (e.where.empty()) pto::fuzz::broken("entry without a place");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const pto::WarningSink quiet = pto::set_warning_sink([](const std::string&) {});  // duplicate JSON keys
  const std::string text(reinterpret_cast<const char*>(data), size);
  pto::fuzz::expect_usage_errors_only([&] {
    const pto::batch::BatchFile batch = pto::batch::parse_batch(text, "fuzz", kFuzzBound);
    if (batch.entries.size() > kFuzzBound) pto::fuzz::broken("more entries than the batch may hold");
    for (const pto::batch::BatchEntry& e : batch.entries) check_entry(e);
    for (const pto::batch::BatchProblem& p : batch.problems)
      if (p.where.empty() || p.message.empty()) pto::fuzz::broken("a problem that names nothing");
  });
  return 0;
}
