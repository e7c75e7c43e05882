// The `sim` backend: the NPU simulator's time for each candidate on an Ascend target.
//
// Each feasible candidate is compiled and simulated in this process (the simulator is
// deterministic and touches no data, so there is nothing to isolate or verify). The
// candidates of a batch are simulated on parallel worker threads (as many as OpenMP
// would use: OMP_NUM_THREADS, else the cores), each result the same as a serial run's;
// the calling thread alone reports them, in index order, as each is known, so a
// caller's on_result (a database commit, a Python signal check) runs where it was
// called from. When on_result asks to stop, no further candidate starts, and the ones
// already under way are finished and dropped.
// Results are `simulated`; detail_json carries what the simulator says about why:
//   SimResult::to_json() plus "simulated": true — cycles, the bound and its utilisation
//   (over the cores that ran tasks), pipe_utilisation per core type (over all cores of
//   the type), cores_used, per-kernel times, L2 hit rate, HBM/L2 traffic and busy time.
#include <omp.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <optional>
#include <thread>

#include <nlohmann/json.hpp>

#include "core/op_library.h"
#include "measure/backends.h"
#include "measure/sim/sim_report.h"
#include "measure/sim/simulator.h"

namespace pto::measure {

namespace {

// The simulator's own report (SimResult::to_json), marked simulated.
std::string sim_detail(const sim::SimResult& r) {
  nlohmann::json detail = r.to_json();
  detail["simulated"] = true;
  return detail.dump();
}

class SimRunner : public Runner {
 public:
  SimRunner(Target target, Coefficients coefficients)
      : target_(std::move(target)), coefficients_(std::move(coefficients)) {}

  std::string name() const override { return "sim"; }

  std::vector<Measurement> measure(const Workload& w, const std::vector<TileConfig>& candidates,
                                   const OnResult& on_result) override {
    const TensorGraph graph = build_graph(w);
    const Predictor predictor(CostModel(graph, target_, coefficients_));
    ParallelBatch batch(candidates.size());
    std::vector<std::thread> workers;
    const size_t threads = std::min<size_t>(static_cast<size_t>(std::max(omp_get_max_threads(), 1)), candidates.size());
    for (size_t t = 0; t < threads; ++t)
      workers.emplace_back([&] { batch.work([&](size_t i) { return measure_one(graph, predictor, candidates[i]); }); });
    std::vector<Measurement> results;
    std::exception_ptr failure;
    try {
      for (size_t i = 0; i < candidates.size(); ++i) {
        results.push_back(batch.take(i));
        if (on_result && !on_result(i, results.back())) break;
      }
    } catch (...) {
      failure = std::current_exception();
    }
    batch.stop();
    for (std::thread& worker : workers) worker.join();
    if (failure) std::rethrow_exception(failure);
    return results;
  }

 private:
  // The slots of one batch: workers claim candidates in index order and fill their
  // slots; the calling thread takes them in index order.
  class ParallelBatch {
   public:
    explicit ParallelBatch(size_t n) : slots_(n) {}

    void work(const std::function<Measurement(size_t)>& measure) {
      for (size_t i; !stopped_ && (i = next_++) < slots_.size();) {
        std::optional<Measurement> m;
        std::exception_ptr error;
        try {
          m = measure(i);
        } catch (...) {
          error = std::current_exception();
        }
        std::lock_guard lock(mutex_);
        slots_[i].result = std::move(m);
        slots_[i].error = error;
        ready_.notify_all();
      }
    }
    Measurement take(size_t i) {
      std::unique_lock lock(mutex_);
      ready_.wait(lock, [&] { return slots_[i].result || slots_[i].error; });
      if (slots_[i].error) std::rethrow_exception(slots_[i].error);
      return std::move(*slots_[i].result);
    }
    void stop() { stopped_ = true; }

   private:
    struct Slot {
      std::optional<Measurement> result;
      std::exception_ptr error;
    };
    std::vector<Slot> slots_;
    std::atomic<size_t> next_ = 0;
    std::atomic<bool> stopped_ = false;
    std::mutex mutex_;
    std::condition_variable ready_;
  };

  Measurement measure_one(const TensorGraph& graph, const Predictor& predictor, const TileConfig& config) const {
    Measurement m = predict(predictor, config, name()).measurement;
    m.simulated = true;
    if (m.ok()) simulate_candidate(graph, config, m);
    stamp(m);
    return m;
  }

  void simulate_candidate(const TensorGraph& graph, const TileConfig& config, Measurement& m) const {
    std::optional<Program> program = compile_candidate(graph, config, target_, m);
    if (!program) return;
    try {
      sim::SimResult r = sim::simulate(*program, target_);
      m.stats = {r.time_ns, r.time_ns, r.time_ns, 1};
      m.detail_json = sim_detail(r);
      sim::attach_sim_report(m, std::move(r));
    } catch (const std::exception& e) {
      m.status = Status::RUNTIME_ERROR;
      m.error = std::string("simulator: ") + e.what();
    }
  }

  Target target_;
  Coefficients coefficients_;
};

}  // namespace

std::unique_ptr<Runner> make_sim_runner(const Target& npu, const RunnerOptions& options) {
  return std::make_unique<SimRunner>(npu, *options.coefficients);
}

}  // namespace pto::measure
