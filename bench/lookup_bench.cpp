// Benchmarks of the JIT's config lookup on a tuning database (results/lookup_latency.md).
//
//   ExactHit/N      DbConfigProvider::choose for a tuned workload, N tuned records
//                   (target < 1 us)
//   NearestShape/N  a shape never asked before, served from the nearest of N tuned
//                   shapes of the same op, dtype and target, its feasibility checked by
//                   analyze (target < 20 us)
//   ModelPick       no tuned neighbour: the cost model's pick over a sample of the
//                   space (the third fallback; what its cap costs)
//   Load100k        opening a database of 100,000 tuned records into the in-memory
//                   index (target < 1 s)
//   DbBest          TuningDb::best on that database: the indexed SQL query
//
//   build/bench/lookup_bench --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
#include <benchmark/benchmark.h>

#include <filesystem>
#include <map>
#include <memory>
#include <set>
#include <random>
#include <unistd.h>

#include "core/target.h"
#include "db/config_lookup.h"
#include "db/tuning_db.h"

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

// Tuned records of one op, dtype and target: the nearest search scans all of them.
DbConfigProvider& provider(size_t records) {
  static std::map<size_t, std::unique_ptr<DbConfigProvider>> providers;
  auto& p = providers[records];
  if (!p) p = std::make_unique<DbConfigProvider>(tuned_matmuls(records));
  return *p;
}

void ExactHit(benchmark::State& state) {
  DbConfigProvider& p = provider(state.range(0));
  const Workload w{"matmul", tuned_matmuls(1).front().workload.shape, DType::F16, {}};
  if (p.choose(w, npu()).source != ConfigSource::Exact) state.SkipWithError("not an exact hit");
  for (auto _ : state) benchmark::DoNotOptimize(p.choose(w, npu()));
}
BENCHMARK(ExactHit)->Arg(1000)->Arg(10000);

void NearestShape(benchmark::State& state) {
  DbConfigProvider& p = provider(state.range(0));
  static int64_t i = 0;  // across repetitions too: a shape asked before is a memoized answer
  for (auto _ : state) {
    ++i;  // odd sizes: never tuned, never asked before
    const Workload w{"matmul", {17 + 2 * (i % 4096), 1001 + 2 * (i / 4096 % 4096), 515}, DType::F16, {}};
    const ConfigChoice c = p.choose(w, npu());
    if (c.source != ConfigSource::Nearest) state.SkipWithError("not a nearest hit");
    benchmark::DoNotOptimize(c);
  }
}
BENCHMARK(NearestShape)->Arg(100)->Arg(1000)->Arg(10000);

void ModelPick(benchmark::State& state) {
  DbConfigProvider p(std::vector<search::TuningRecord>{});
  static int64_t i = 0;
  for (auto _ : state) {
    ++i;
    const Workload w{"matmul", {1000 + i, 4096, 1024}, DType::F16, {}};
    benchmark::DoNotOptimize(p.choose(w, npu()));
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
