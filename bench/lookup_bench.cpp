// Benchmarks of the JIT's config lookup on a tuning database (results/lookup_latency.md).
//
//   ExactHit/N      the JIT's lookup (core/config_chain.h: DbConfigProvider, then
//                   ModelPickProvider) for a tuned workload, N tuned records
//                   (target < 1 us)
//   TransferShape/N a shape never asked before, served from the configs of the 4
//                   nearest of N tuned shapes of the same op, dtype and target and
//                   the default, each analyzed once and priced from that summary by
//                   the cost model (target < 50 us)
//   TransferMemo/N  the same shapes asked again: the memoized answer (target < 1 us)
//   NearestShape/N  the same with transfer_neighbours 0: the nearest one's config,
//                   unranked (target < 20 us)
//   ModelPick       no tuned neighbour: the cost model's pick over a sample of the
//                   space (the third fallback; what its cap costs)
//   Load100k        opening a database of 100,000 tuned records into the in-memory
//                   index (target < 1 s)
//   DbBest          TuningDb::best on that database: the indexed SQL query
//
//   build/bench/lookup_bench --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
#include <benchmark/benchmark.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <memory>
#include <set>
#include <random>
#include <unistd.h>

#include "core/config_chain.h"
#include "core/target.h"
#include "db/config_lookup.h"
#include "db/tuning_db.h"
#include "search/model_pick.h"

namespace pto::db {
namespace {

const Target& npu() {
  static const Target t = load_target("ascend910b1");
  return t;
}

const char* kCube = R"({"cube":{"m":[64,64],"k":[32,64],"n":[64,128]},"nbuffer":2})";

// `n` tuned matmuls of distinct shapes (multiples of 16 up to 16384) on ascend910b1.
std::vector<search::TuningRecord> tuned_matmuls(size_t n) {
  std::mt19937_64 rng(1);
  std::vector<search::TuningRecord> out;
  std::set<Shape> seen;
  const std::string fp = npu().fingerprint();
  const TileConfig config = TileConfig::parse(kCube);
  while (out.size() < n) {
    Shape s{16 * int64_t(1 + rng() % 1024), 16 * int64_t(1 + rng() % 1024), 16 * int64_t(1 + rng() % 1024)};
    if (!seen.insert(s).second) continue;
    search::TuningRecord r;
    r.workload = Workload{"matmul", s, DType::F16, {}};
    r.config = config;
    r.target_name = npu().name;
    r.target_fingerprint = fp;
    r.backend = "sim";
    r.measurement.backend = "sim";
    r.measurement.stats = {1000.0 + double(out.size()), 990, 1010, 3};
    r.measurement.timestamp = int64_t(out.size());
    r.versions = search::Versions::current();
    r.strategy = "bench";
    out.push_back(std::move(r));
  }
  return out;
}

// A database file of 100,000 tuned records, written once per run and removed at exit
// (the path is never destroyed, so the exit handler can still read it).
const std::string& db_100k() {
  static const std::string* path = [] {
    auto* p = new std::string(std::filesystem::temp_directory_path() /
                              ("pto_lookup_bench_" + std::to_string(::getpid()) + ".db"));
    std::filesystem::remove(*p);
    TuningDb::open(*p)->commit(tuned_matmuls(100000));
    std::atexit([] {
      for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(db_100k() + suffix);
    });
    return p;
  }();
  return *path;
}

// The JIT's lookup over `database`: its answer, else the cost model's pick, else the default.
std::unique_ptr<ConfigChain> jit_lookup(std::shared_ptr<DbConfigProvider> database) {
  auto model = std::make_shared<search::ModelPickProvider>(database->model_sources());
  return std::make_unique<ConfigChain>(std::vector<std::shared_ptr<ConfigProvider>>{std::move(database), std::move(model)});
}

// Tuned records of one op, dtype and target: the nearest search scans all of them.
// `transfer`: rank the nearest ones' configs (the default), or serve the nearest one's.
ConfigChain& provider(size_t records, bool transfer = true) {
  static std::map<std::pair<size_t, bool>, std::unique_ptr<ConfigChain>> providers;
  auto& p = providers[{records, transfer}];
  LookupOptions options;
  if (!transfer) options.transfer_neighbours = 0;
  if (!p) p = jit_lookup(std::make_shared<DbConfigProvider>(tuned_matmuls(records), options));
  return *p;
}

void ExactHit(benchmark::State& state) {
  ConfigChain& p = provider(state.range(0));
  const Workload w{"matmul", tuned_matmuls(1).front().workload.shape, DType::F16, {}};
  if (p.choose(w, npu()).source != ConfigSource::Exact) state.SkipWithError("not an exact hit");
  for (auto _ : state) benchmark::DoNotOptimize(p.choose(w, npu()));
}
BENCHMARK(ExactHit)->Arg(1000)->Arg(10000);

// Shapes never tuned and never asked before (odd sizes; `next` counts across
// repetitions too, since a shape asked before is a memoized answer), each looked up once.
void untuned_lookups(benchmark::State& state, ConfigChain& p, int64_t& next,
                     std::initializer_list<ConfigSource> expected) {
  for (auto _ : state) {
    ++next;
    const Workload w{"matmul", {17 + 2 * (next % 4096), 1001 + 2 * (next / 4096 % 4096), 515}, DType::F16, {}};
    const ConfigChoice c = p.choose(w, npu());
    if (std::find(expected.begin(), expected.end(), c.source) == expected.end())
      state.SkipWithError("an answer of another source");
    benchmark::DoNotOptimize(c);
  }
}

void TransferShape(benchmark::State& state) {
  static int64_t next = 0;
  untuned_lookups(state, provider(state.range(0)), next, {ConfigSource::Transfer, ConfigSource::Default});
}
BENCHMARK(TransferShape)->Arg(100)->Arg(1000)->Arg(10000);

// A shape served by a transfer once, then asked again: the memo's answer.
void TransferMemo(benchmark::State& state) {
  ConfigChain& p = provider(state.range(0));
  const Workload w{"matmul", {12345, 1001, 515}, DType::F16, {}};
  const ConfigSource first = p.choose(w, npu()).source;
  if (first != ConfigSource::Transfer && first != ConfigSource::Default) state.SkipWithError("not a transfer");
  for (auto _ : state) benchmark::DoNotOptimize(p.choose(w, npu()));
}
BENCHMARK(TransferMemo)->Arg(1000)->Arg(10000);

void NearestShape(benchmark::State& state) {
  static int64_t next = 0;
  untuned_lookups(state, provider(state.range(0), false), next, {ConfigSource::Nearest});
}
BENCHMARK(NearestShape)->Arg(100)->Arg(1000)->Arg(10000);

void ModelPick(benchmark::State& state) {
  const std::unique_ptr<ConfigChain> p =
      jit_lookup(std::make_shared<DbConfigProvider>(std::vector<search::TuningRecord>{}));
  static int64_t i = 0;
  for (auto _ : state) {
    ++i;
    const Workload w{"matmul", {1000 + i, 4096, 1024}, DType::F16, {}};
    benchmark::DoNotOptimize(p->choose(w, npu()));
  }
}
BENCHMARK(ModelPick)->Unit(benchmark::kMillisecond);

void Load100k(benchmark::State& state) {
  const std::string& path = db_100k();
  for (auto _ : state) {
    DbConfigProvider p(path);
    if (p.size() != 100000) state.SkipWithError("wrong record count");
  }
}
BENCHMARK(Load100k)->Unit(benchmark::kMillisecond)->Iterations(3);

void DbBest(benchmark::State& state) {
  auto db = TuningDb::open(db_100k(), OpenMode::ReadOnly);
  const search::TuningRecord r = tuned_matmuls(1).front();
  for (auto _ : state) benchmark::DoNotOptimize(db->best(r.key()));
}
BENCHMARK(DbBest);

}  // namespace
}  // namespace pto::db

BENCHMARK_MAIN();
