// flash_attention against the unfused attention on this machine's CPU (results/flash_attention.md):
// each op runs at the config its tuning chose, looked up as the JIT does in the tuning
// database $PTO_TUNE_DB (tune both first), on the CPU runtime through the cpu backend,
// which verifies every run against the fp64 reference and times it. A benchmark's time is
// the backend's median; `verified` is 1 when the output matched; `config_source` 0 means the
// database had no exact record and the op's default ran instead (the bench says so).
//
//   pto-tune tune --op flash_attention --shapes 1,8,2048,2048,64 --dtype fp32 --db DB
//   pto-tune tune --op attention --shapes 1,8,2048,64 --dtype fp32 --db DB
//   PTO_TUNE_DB=DB build/bench/attention_host_bench
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <memory>
#include <string>

#include "core/config_chain.h"
#include "core/target.h"
#include "db/config_lookup.h"
#include "measure/runner.h"
#include "search/model_pick.h"

namespace pto {
namespace {

void Host(benchmark::State& state, const std::string& key) {
  const Workload w = Workload::parse_key(key);
  const Target host = load_target("host");
  const char* db = std::getenv("PTO_TUNE_DB");
  ConfigChain lookup({std::make_shared<db::DbConfigProvider>(db ? db : ""), std::make_shared<search::ModelPickProvider>()});
  const ConfigChoice choice = lookup.choose(w, host);
  if (choice.source != ConfigSource::Exact)
    state.SetLabel("no tuned record in $PTO_TUNE_DB: " + choice.describe() + " config");
  const std::unique_ptr<measure::Runner> cpu = measure::make_runner("cpu", host);
  bool verified = true;
  for (auto _ : state) {
    const measure::Measurement m = cpu->measure(w, {choice.config}).front();
    if (!m.ok()) {
      state.SkipWithError(("the cpu backend failed: " + m.error).c_str());
      return;
    }
    verified = verified && m.verified;
    state.SetIterationTime(m.stats.median_ns / 1e9);
  }
  state.counters["verified"] = verified;
  state.counters["config_source"] = choice.source == ConfigSource::Exact;
}

BENCHMARK_CAPTURE(Host, flash_attention_1x8x2048x2048x64_fp32, "flash_attention|1,8,2048,2048,64|fp32")
    ->UseManualTime()->Iterations(3)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(Host, attention_1x8x2048x64_fp32, "attention|1,8,2048,64|fp32")
    ->UseManualTime()->Iterations(3)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace pto

BENCHMARK_MAIN();
