// pto-tune-worker's request: it round-trips through JSON for random configs and
// options, the worker measures what the forking path measures (the fixture rebuilt
// from the seed verifies the same outputs), and a malformed request or argument is
// reported on stderr with kWorkThrewExitCode, never a crash.
#include <unistd.h>

#include <random>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/op_library.h"
#include "measure/cpu/worker.h"
#include "measure/isolation.h"
#include "tests/builtin_targets.h"

namespace pto::measure {
namespace {

using pto::testing::host;

RunnerOptions random_options(std::mt19937& rng) {
  RunnerOptions o;
  o.min_time_ms = static_cast<double>(rng() % 100) / 8;
  o.min_repetitions = 1 + static_cast<int>(rng() % 9);
  o.warmup = static_cast<int>(rng() % 3);
  o.flush_cache = rng() % 2;
  o.threads = static_cast<int>(rng() % 5);
  o.seed = rng();
  return o;
}

TEST(WorkerRequest, RoundTripsThroughJson) {
  std::mt19937 rng(3);
  auto size = [&rng] { return static_cast<int64_t>(1 + rng() % 300); };
  for (int trial = 0; trial < 20; ++trial) {
    Workload w{trial % 2 ? "matmul" : "softmax",
               trial % 2 ? Shape{size(), size(), size()} : Shape{size(), size()},
               trial % 3 ? DType::F16 : DType::F32,
               {}};
    CpuJob job;
    for (int c = 0; c < 1 + trial % 3; ++c) {
      TileConfig config = default_config(w, build_graph(w), host());
      config.nbuffer = 1 + static_cast<int>(rng() % 2);
      job.configs.push_back(config);
    }
    job.interleaved = trial % 4 == 0;
    if (trial % 5 == 1) job.fault = static_cast<Fault>(rng() % 3);
    WorkerRequest request{w, host(), random_options(rng), job};
    WorkerRequest back = WorkerRequest::from_json(nlohmann::json::parse(request.to_json().dump()));
    EXPECT_EQ(back.workload.key(), w.key());
    EXPECT_EQ(back.host.fingerprint(), host().fingerprint());
    EXPECT_EQ(back.job.configs, job.configs);
    EXPECT_EQ(back.job.interleaved, job.interleaved);
    EXPECT_EQ(back.job.fault, job.fault);
    EXPECT_EQ(back.options.min_time_ms, request.options.min_time_ms);
    EXPECT_EQ(back.options.min_repetitions, request.options.min_repetitions);
    EXPECT_EQ(back.options.warmup, request.options.warmup);
    EXPECT_EQ(back.options.flush_cache, request.options.flush_cache);
    EXPECT_EQ(back.options.threads, request.options.threads);
    EXPECT_EQ(back.options.seed, request.options.seed);
  }
}

TEST(WorkerRequest, ServedRequestVerifiesLikeTheFixtureOfTheParent) {
  Workload w{"gelu", {37, 129}, DType::F16, {}};
  RunnerOptions o;
  o.min_time_ms = 0;
  o.min_repetitions = 1;
  o.warmup = 0;
  o.seed = 9;
  CpuJob job{{default_config(w, build_graph(w), host())}, false, Fault::CorruptOutput};
  std::vector<Measurement> served =
      measurements_from_text(serve_worker_request(WorkerRequest{w, host(), o, job}.to_json().dump()));
  std::vector<Measurement> here = run_job(make_fixture(w, build_graph(w), o.seed), job, host(), o);
  ASSERT_EQ(served.size(), 1u);
  ASSERT_EQ(here.size(), 1u);
  EXPECT_EQ(served[0].status, Status::WRONG_RESULT) << served[0].error;
  EXPECT_EQ(served[0].max_abs_err, here[0].max_abs_err);  // the same inputs, the same error
}

TEST(WorkerProcess, MalformedRequestIsReportedNotCrashed) {
  for (const std::string request : {"", "{", "{\"workload\":\"matmul|1,2|fp16\"}", "[1,2]"}) {
    ChildResult r = run_in_worker(worker_executable(), {}, request, 30);
    EXPECT_EQ(r.end, ChildResult::End::Exited) << request << ": " << r.describe();
    EXPECT_EQ(r.exit_code, kWorkThrewExitCode) << request;
    EXPECT_FALSE(r.stderr_tail.empty()) << request;
  }
}

TEST(WorkerProcess, UnknownArgumentIsNamed) {
  ChildResult r = run_in_worker(worker_executable(), {"--frobnicate"}, "", 30);
  EXPECT_EQ(r.exit_code, kWorkThrewExitCode);
  EXPECT_NE(r.describe().find("--frobnicate"), std::string::npos) << r.describe();
}

TEST(WorkerProcess, MeasuresARequest) {
  Workload w{"add", {40, 72}, DType::F32, {}};
  RunnerOptions o;
  o.min_time_ms = 0;
  o.min_repetitions = 2;
  CpuJob job{{default_config(w, build_graph(w), host())}, false, std::nullopt};
  ChildResult r = run_in_worker(worker_executable(), {kWorkerParentFlag, std::to_string(getpid())},
                                WorkerRequest{w, host(), o, job}.to_json().dump(), 60);
  ASSERT_TRUE(r.succeeded()) << r.describe();
  std::vector<Measurement> m = measurements_from_text(r.output);
  ASSERT_EQ(m.size(), 1u);
  EXPECT_EQ(m[0].status, Status::OK) << m[0].error;
  EXPECT_TRUE(m[0].verified);
  EXPECT_GE(m[0].stats.repetitions, 2);
}

}  // namespace
}  // namespace pto::measure
