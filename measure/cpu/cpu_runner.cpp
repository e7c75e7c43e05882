// The `cpu` backend: real wall-clock time of core's CPU runtime on this host.
//
// Per candidate: the cost model screens out infeasible configs in this process and
// gives the prediction that goes beside the measurement; the rest are compiled, run
// once, verified against the reference and timed in a child process
// (measure/isolation.h) under the per-candidate timeout, so that a crash or a hang
// becomes RUNTIME_ERROR or TIMEOUT and the batch goes on. The child is a fork of this
// process, or a spawned pto-tune-worker (RunnerOptions::child_start, for a process
// that must not fork, such as a Python interpreter).
#include <unistd.h>

#include <algorithm>
#include <memory>
#include <mutex>
#include <thread>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/op_library.h"
#include "core/warning.h"
#include "measure/backends.h"
#include "measure/cpu/timing.h"
#include "measure/cpu/worker.h"
#include "measure/isolation.h"

namespace pto::measure {

namespace {

// The fixture of (workload, seed), shared by the cpu runners alive in this process: a
// tuner measures one workload batch after batch, with a search runner and a finalist
// runner, and the fp64 reference of a large workload takes seconds. Inputs and
// reference are deterministic in (workload, seed); the fixture lives as long as a
// runner holds it.
std::shared_ptr<const WorkloadFixture> shared_fixture(const Workload& w, const TensorGraph& graph, uint64_t seed) {
  static std::mutex mutex;
  static std::string key;
  static std::weak_ptr<const WorkloadFixture> latest;
  std::lock_guard lock(mutex);
  const std::string wanted = w.key() + " seed " + std::to_string(seed);
  std::shared_ptr<const WorkloadFixture> fixture = latest.lock();
  if (fixture && key == wanted) return fixture;
  fixture = std::make_shared<const WorkloadFixture>(make_fixture(w, graph, seed));
  key = wanted;
  latest = fixture;
  return fixture;
}

Measurement failed(Status status, const std::string& why) {
  Measurement m;
  m.backend = "cpu";
  m.status = status;
  m.error = why;
  return m;
}

// How a child that gave no usable result failed, as one Measurement.
Measurement from_child_failure(const ChildResult& child) {
  return failed(child.end == ChildResult::End::TimedOut ? Status::TIMEOUT : Status::RUNTIME_ERROR,
                child.describe());
}

class CpuRunner : public Runner {
 public:
  CpuRunner(Target host, RunnerOptions options, std::string worker)
      : host_(std::move(host)), options_(std::move(options)), worker_(std::move(worker)) {}

  std::string name() const override { return "cpu"; }

  std::vector<Measurement> measure(const Workload& w, const std::vector<TileConfig>& candidates,
                                   const OnResult& on_result) override {
    Batch& batch = batch_for(w);
    const Predictor predictor(CostModel(batch.graph, host_, *options_.coefficients));
    std::vector<Measurement> results;
    for (size_t i = 0; i < candidates.size(); ++i) {
      Measurement m = predict(predictor, candidates[i], name()).measurement;
      if (m.ok()) {
        double predicted_ns = m.predicted_ns;
        m = isolated(batch, CpuJob{{candidates[i]}, false, fault_for(i)}).front();
        m.predicted_ns = predicted_ns;
      }
      stamp(m);
      results.push_back(std::move(m));
      if (on_result && !on_result(i, results.back())) break;
    }
    return results;
  }

  // The finalists run together in one child, so their results are known together.
  std::vector<Measurement> measure_interleaved(const Workload& w, const std::vector<TileConfig>& finalists,
                                               const OnResult& on_result) override {
    Batch& batch = batch_for(w);
    std::vector<Measurement> results = isolated(batch, CpuJob{finalists, true, std::nullopt});
    const Predictor predictor(CostModel(batch.graph, host_, *options_.coefficients));
    for (size_t i = 0; i < results.size(); ++i) {
      results[i].predicted_ns = predict(predictor, finalists[i], name()).measurement.predicted_ns;
      stamp(results[i]);
      if (on_result) on_result(i, results[i]);
    }
    return results;
  }

 private:
  // The workload of the latest measure() call; its fixture is taken once a candidate
  // gets to run here or in a forked child (a spawned worker builds its own), and kept
  // for the next calls on the same workload.
  struct Batch {
    Workload workload;
    TensorGraph graph;
    std::shared_ptr<const WorkloadFixture> fixture;

    const WorkloadFixture& fixture_for(uint64_t seed) {
      if (!fixture) fixture = shared_fixture(workload, graph, seed);
      return *fixture;
    }
  };

  Batch& batch_for(const Workload& w) {
    if (!batch_ || batch_->workload.key() != w.key()) batch_.emplace(Batch{w, build_graph(w), {}});
    return *batch_;
  }

  std::optional<Fault> fault_for(size_t candidate) const {
    auto it = options_.faults.find(candidate);
    if (it == options_.faults.end()) return std::nullopt;
    return it->second;
  }

  // Runs `job` in a child — forked, or a spawned worker — under its candidates' summed
  // timeouts, or here when isolation is off; a child that fails gives each candidate
  // the same failed Measurement.
  std::vector<Measurement> isolated(Batch& batch, const CpuJob& job) {
    if (!options_.isolate) return run_job(batch.fixture_for(options_.seed), job, host_, options_);
    const size_t candidates = job.configs.size();
    const double timeout_s = options_.timeout_s * static_cast<double>(candidates);
    ChildResult child;
    if (options_.child_start == ChildStart::Spawn) {
      WorkerRequest request{batch.workload, host_, options_, job};
      child = run_in_worker(worker_, {kWorkerParentFlag, std::to_string(getpid())}, request.to_json().dump(),
                            timeout_s);
    } else {
      const WorkloadFixture& fixture = batch.fixture_for(options_.seed);
      child = run_in_child([&] { return measurements_to_text(run_job(fixture, job, host_, options_)); },
                           timeout_s);
    }
    if (!child.succeeded()) return std::vector<Measurement>(candidates, from_child_failure(child));
    std::string why;
    try {
      std::vector<Measurement> results = measurements_from_text(child.output);
      if (results.size() == candidates) return results;
      why = std::to_string(results.size()) + " results for " + std::to_string(candidates) +
            " candidates";
    } catch (const std::exception& e) {
      why = e.what();
    }
    Measurement unreadable =
        failed(Status::RUNTIME_ERROR, "unreadable result from the measurement child: " + why);
    return std::vector<Measurement>(candidates, unreadable);
  }

  Target host_;
  RunnerOptions options_;
  std::string worker_;  // the pto-tune-worker executable, for ChildStart::Spawn
  std::optional<Batch> batch_;
};

}  // namespace

namespace {

// More OpenMP threads than cores only time oversubscription (and 100000 of them take
// gigabytes of stacks): clamped to the cores, with a warning that says so.
RunnerOptions clamp_threads(RunnerOptions options) {
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  if (options.threads > cores) {
    warn("threads " + std::to_string(options.threads) + " is more than the " + std::to_string(cores) +
         " cores of this machine; using " + std::to_string(cores));
    options.threads = cores;
  }
  return options;
}

}  // namespace

std::unique_ptr<Runner> make_cpu_runner(const Target& host, const RunnerOptions& requested) {
  const RunnerOptions options = clamp_threads(requested);
  timing_policy(options);  // rejects bad timing options now, not in every child
  check_timeout(options.timeout_s);
  if (options.threads < 0)
    usage_error("threads must be >= 0 (0 = all), got " + std::to_string(options.threads));
  for (const auto& [candidate, fault] : options.faults)
    if (fault != Fault::CorruptOutput && !options.isolate)
      usage_error("the injected crash or hang of candidate " + std::to_string(candidate) +
                  " needs isolation (it would take this process with it)");
  std::string worker;
  if (options.isolate && options.child_start == ChildStart::Spawn) worker = worker_executable();
  return std::make_unique<CpuRunner>(host, options, worker);
}

}  // namespace pto::measure
