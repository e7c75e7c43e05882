// The `cpu` backend: real wall-clock time of core's CPU runtime on this host.
//
// Per candidate: the cost model screens out infeasible configs in this process and
// gives the prediction that goes beside the measurement; the rest are compiled, run
// once, verified against the reference and timed in a child process
// (measure/isolation.h) under the per-candidate timeout, so that a crash or a hang
// becomes RUNTIME_ERROR or TIMEOUT and the batch goes on.
#include <algorithm>
#include <thread>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/op_library.h"
#include "core/warning.h"
#include "measure/backends.h"
#include "measure/cpu/candidate.h"
#include "measure/cpu/timing.h"
#include "measure/isolation.h"

namespace pto::measure {

namespace {

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
  CpuRunner(Target host, RunnerOptions options) : host_(std::move(host)), options_(std::move(options)) {}

  std::string name() const override { return "cpu"; }

  std::vector<Measurement> measure(const Workload& w, const std::vector<TileConfig>& candidates,
                                   const OnResult& on_result) override {
    TensorGraph graph = build_graph(w);
    CostModel model(graph, host_, *options_.coefficients);
    std::optional<WorkloadFixture> fixture;  // built only once a candidate gets to run
    std::vector<Measurement> results;
    for (size_t i = 0; i < candidates.size(); ++i) {
      Measurement m = predict(model, candidates[i], name()).measurement;
      if (m.ok()) {
        if (!fixture) fixture = make_fixture(w, graph, options_.seed);
        double predicted_ns = m.predicted_ns;
        m = run_one(*fixture, candidates[i], fault_for(i));
        m.predicted_ns = predicted_ns;
      }
      stamp(m);
      results.push_back(std::move(m));
      if (on_result) on_result(i, results.back());
    }
    return results;
  }

  // The finalists run together in one child, so their results are known together.
  std::vector<Measurement> measure_interleaved(const Workload& w, const std::vector<TileConfig>& finalists,
                                               const OnResult& on_result) override {
    TensorGraph graph = build_graph(w);
    WorkloadFixture fixture = make_fixture(w, graph, options_.seed);
    std::vector<Measurement> results = isolated(
        [&] { return measure_interleaved_candidates(fixture, finalists, host_, options_); },
        finalists.size());
    CostModel model(graph, host_, *options_.coefficients);
    for (size_t i = 0; i < results.size(); ++i) {
      results[i].predicted_ns = predict(model, finalists[i], name()).measurement.predicted_ns;
      stamp(results[i]);
      if (on_result) on_result(i, results[i]);
    }
    return results;
  }

 private:
  using Work = std::function<std::vector<Measurement>()>;

  std::optional<Fault> fault_for(size_t candidate) const {
    auto it = options_.faults.find(candidate);
    if (it == options_.faults.end()) return std::nullopt;
    return it->second;
  }

  Measurement run_one(const WorkloadFixture& fixture, const TileConfig& config,
                      std::optional<Fault> fault) {
    Work work = [&] {
      return std::vector<Measurement>{measure_candidate(fixture, config, host_, options_, fault)};
    };
    return isolated(work, 1).front();
  }

  // Runs `work` for `candidates` candidates, in a child under their summed timeouts
  // unless isolation is off; a child that fails gives each the same failed Measurement.
  std::vector<Measurement> isolated(const Work& work, size_t candidates) {
    if (!options_.isolate) return work();
    ChildResult child = run_in_child([&] { return to_json(work()).dump(); },
                                     options_.timeout_s * static_cast<double>(candidates));
    if (!child.succeeded()) return std::vector<Measurement>(candidates, from_child_failure(child));
    std::string why;
    try {
      std::vector<Measurement> results = from_json(nlohmann::json::parse(child.output));
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

  static nlohmann::json to_json(const std::vector<Measurement>& list) {
    nlohmann::json j = nlohmann::json::array();
    for (const Measurement& m : list) j.push_back(m.to_json());
    return j;
  }

  static std::vector<Measurement> from_json(const nlohmann::json& j) {
    std::vector<Measurement> list;
    for (const auto& item : j) list.push_back(Measurement::from_json(item));
    return list;
  }

  Target host_;
  RunnerOptions options_;
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
  constexpr double kMaxTimeoutS = 24 * 3600;  // a day; past it a deadline is a typo
  if (!(options.timeout_s > 0 && options.timeout_s <= kMaxTimeoutS))
    usage_error("the per-candidate timeout must be > 0 s and at most a day (86400 s), got " +
                std::to_string(options.timeout_s));
  if (options.threads < 0)
    usage_error("threads must be >= 0 (0 = all), got " + std::to_string(options.threads));
  for (const auto& [candidate, fault] : options.faults)
    if (fault != Fault::CorruptOutput && !options.isolate)
      usage_error("the injected crash or hang of candidate " + std::to_string(candidate) +
                  " needs isolation (it would take this process with it)");
  return std::make_unique<CpuRunner>(host, options);
}

}  // namespace pto::measure
