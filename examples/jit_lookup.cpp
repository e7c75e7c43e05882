// jit_lookup: how an application compiles operators through pto-tune's JIT with the
// configs of a tuning database, and runs them on this CPU.
//
//   jit_lookup [DB]      (default: $PTO_TUNE_DB, else ~/.cache/pto-tune/tune.db)
//
// For each workload it asks the JIT's fallback order for a config (never measuring): a
// ConfigChain (core/config_chain.h) of the database's db::DbConfigProvider and the cost
// model's search::ModelPickProvider, then the default. It compiles with jit_compile
// (cached: the second call of a workload compiles nothing), runs the program on the CPU
// runtime, checks it against the op's fp64 reference, and prints where the config came
// from: exact, nearest tuned shape, the cost model's pick or the default (marked stale
// when tuned under another compiler version).
#include <chrono>
#include <cstdio>
#include <exception>
#include <memory>
#include <optional>
#include <string>

#include "core/config_chain.h"
#include "core/cpu_runtime.h"
#include "core/jit.h"
#include "core/op_library.h"
#include "core/target.h"
#include "db/config_lookup.h"
#include "db/tuning_db.h"
#include "search/model_pick.h"

namespace {

// Compiles `w` through the JIT, runs it once on random inputs and returns the
// largest difference from the reference.
double compile_and_run(const pto::Workload& w, const pto::Target& host, pto::ConfigProvider& provider,
                       pto::JitResult& result) {
  result = pto::jit_compile(w, host, &provider);
  const std::vector<pto::HostTensor> inputs = pto::random_inputs(result.compiled->graph, /*seed=*/1);
  pto::CpuExecutor executor(result.compiled->program);
  const std::vector<pto::HostTensor> outputs = executor.run(inputs);
  const std::vector<pto::HostTensor> expected = pto::find_op(w.op).reference(w, inputs);
  double error = 0;
  for (size_t i = 0; i < outputs.size(); ++i) error = std::max(error, pto::max_abs_diff(outputs[i], expected[i]));
  return error;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const std::string path = pto::db::resolve_db_path(argc > 1 ? std::optional<std::string>(argv[1]) : std::nullopt);
    const auto database = std::make_shared<pto::db::DbConfigProvider>(path);
    pto::ConfigChain provider({database, std::make_shared<pto::search::ModelPickProvider>(database->model_sources())});
    const pto::Target host = pto::load_target("host");
    std::printf("tuning database %s: %zu tuned configs\n", path.c_str(), database->size());
    for (const char* key : {"matmul|256,256,256|fp32", "matmul|200,300,250|fp32", "softmax|64,1000|fp32",
                            "matmul|256,256,256|fp32"}) {
      const pto::Workload w = pto::Workload::parse_key(key);
      pto::JitResult result;
      const auto start = std::chrono::steady_clock::now();
      const double error = compile_and_run(w, host, provider, result);
      const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
      std::printf("%-26s %-36s %s  max error %.2g  %.1f ms%s\n", key, result.choice.describe().c_str(),
                  result.choice.config.to_string().c_str(), error, ms, result.cache_hit ? " (cached program)" : "");
    }
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "jit_lookup: %s\n", e.what());
    return 1;
  }
}
