#include "measure/cpu/candidate.h"

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <deque>
#include <exception>
#include <memory>
#include <thread>

#include <nlohmann/json.hpp>

#include "core/cpu_runtime.h"
#include "core/op_library.h"
#include "measure/backends.h"
#include "measure/cpu/cache_flush.h"
#include "measure/cpu/host_memory.h"
#include "measure/cpu/timing.h"
#include "measure/cpu/verify.h"
#include "measure/interleave.h"
#include "measure/stats.h"

namespace pto::measure {

namespace {

Measurement cpu_measurement() {
  Measurement m;
  m.backend = "cpu";
  return m;
}

void set_failure(Measurement& m, Status status, const std::string& why) {
  m.status = status;
  m.error = why;
}

// A segmentation fault that kills the process, as a bad store would; the default
// action is restored first because sanitizers catch SIGSEGV and exit instead.
[[noreturn]] void crash() {
  std::signal(SIGSEGV, SIG_DFL);
  std::raise(SIGSEGV);
  std::abort();  // not reached: the signal's default action ends the process
}

[[noreturn]] void hang_forever() {
  for (;;) std::this_thread::sleep_for(std::chrono::hours(1));
}

// The first run, checked against the reference. Returns the executor, warm and ready
// for timing, or null with `m` saying why the candidate failed. Throws what the
// runtime throws.
std::unique_ptr<CpuExecutor> run_and_verify(const WorkloadFixture& fixture, const Program& program,
                                            const RunnerOptions& options, std::optional<Fault> fault,
                                            Measurement& m) {
  auto executor = std::make_unique<CpuExecutor>(program, ExecOptions{options.threads});
  if (fault == Fault::Crash) crash();
  if (fault == Fault::Hang) hang_forever();
  std::vector<HostTensor> outputs = executor->run(fixture.inputs);
  if (fault == Fault::CorruptOutput) outputs.at(0).set(0, outputs.at(0).get(0) + 1000.0);

  Verification check = verify_outputs(fixture.graph, outputs, fixture.expected, fixture.accumulation);
  m.max_abs_err = check.max_abs_err;
  if (!check.passed) {
    set_failure(m, Status::WRONG_RESULT, check.mismatch);
    return nullptr;
  }
  m.verified = true;
  return executor;
}

// Runs before each timed run: a cache flush when asked for, else nothing.
std::function<void()> before_each_run(const RunnerOptions& options, const Target& host,
                                      std::unique_ptr<CacheFlusher>& flusher) {
  if (!options.flush_cache) return {};
  flusher = std::make_unique<CacheFlusher>(host.l2_bytes);
  return [&flusher] { flusher->flush(); };
}

// The verified first run was an untimed run of the same executor on the same inputs:
// it counts as the first warm-up run.
TimingPolicy after_verified_run(const RunnerOptions& options) {
  TimingPolicy policy = timing_policy(options);
  policy.warmup = std::max(0, policy.warmup - 1);
  return policy;
}

std::string interleave_detail(const Stats& stats) {
  return nlohmann::json{{"interleaved", true}, {"spread", relative_spread(stats)}}.dump();
}

}  // namespace

WorkloadFixture make_fixture(const Workload& w, const TensorGraph& graph, uint64_t seed) {
  check_fits_host_memory(graph);
  WorkloadFixture fixture{w, graph, random_inputs(graph, seed), {}, accumulation_length(graph)};
  fixture.expected = find_op(w.op).reference(w, fixture.inputs);
  return fixture;
}

Measurement measure_candidate(const WorkloadFixture& fixture, const TileConfig& config,
                              const Target& host, const RunnerOptions& options,
                              std::optional<Fault> fault) {
  Measurement m = cpu_measurement();
  std::optional<Program> program = compile_candidate(fixture.graph, config, host, m);
  if (!program) return m;
  try {
    auto executor = run_and_verify(fixture, *program, options, fault, m);
    if (!executor) return m;
    std::unique_ptr<CacheFlusher> flusher;
    auto flush = before_each_run(options, host, flusher);
    auto samples = time_runs([&] { executor->execute(fixture.inputs); }, after_verified_run(options), flush);
    m.stats = summarize(samples);
  } catch (const std::exception& e) {
    set_failure(m, Status::RUNTIME_ERROR, e.what());
  }
  return m;
}

std::vector<Measurement> measure_interleaved_candidates(const WorkloadFixture& fixture,
                                                        const std::vector<TileConfig>& finalists,
                                                        const Target& host,
                                                        const RunnerOptions& options) {
  std::vector<Measurement> results(finalists.size(), cpu_measurement());
  std::deque<Program> programs;  // a deque keeps each Program where its executor points
  std::vector<std::unique_ptr<CpuExecutor>> executors;
  std::vector<size_t> timed;     // finalists that passed verification
  for (size_t i = 0; i < finalists.size(); ++i) {
    std::optional<Program> program = compile_candidate(fixture.graph, finalists[i], host, results[i]);
    if (!program) continue;
    programs.push_back(std::move(*program));
    try {
      auto executor = run_and_verify(fixture, programs.back(), options, std::nullopt, results[i]);
      if (!executor) continue;
      executors.push_back(std::move(executor));
      timed.push_back(i);
    } catch (const std::exception& e) {
      set_failure(results[i], Status::RUNTIME_ERROR, e.what());
    }
  }

  std::vector<std::function<void()>> runs;
  for (auto& executor : executors) runs.push_back([&] { executor->execute(fixture.inputs); });
  std::unique_ptr<CacheFlusher> flusher;
  auto flush = before_each_run(options, host, flusher);
  try {
    auto samples = time_interleaved(runs, after_verified_run(options), flush);
    for (size_t k = 0; k < timed.size(); ++k) {
      Measurement& m = results[timed[k]];
      m.stats = summarize(samples[k]);
      m.detail_json = interleave_detail(m.stats);
    }
  } catch (const std::exception& e) {
    // Every finalist ran cleanly once already; which one failed in the rounds is unknown.
    for (size_t i : timed) set_failure(results[i], Status::RUNTIME_ERROR, e.what());
  }
  return results;
}

}  // namespace pto::measure
