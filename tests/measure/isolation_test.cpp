// Child-process isolation: results come back, and a crash, an abort, a throw or a hang
// in the child becomes a described failure while the parent carries on — including
// after the parent has used OpenMP, which a plain fork does not survive. The same for a
// spawned executable (run_in_worker), driven here through /bin/sh so that the
// mechanism is tested apart from pto-tune-worker; and how the worker is found.
#include <omp.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "core/error.h"
#include "measure/isolation.h"

namespace pto::measure {
namespace {

int parallel_team_size(int threads) {
  std::atomic<int> members{0};
#pragma omp parallel num_threads(threads)
  members.fetch_add(1);
  return members.load();
}

TEST(Isolation, ReturnsWhatTheWorkReturns) {
  ChildResult r = run_in_child([] { return std::string(100000, 'x') + "end"; }, 10);
  ASSERT_TRUE(r.succeeded()) << r.describe();
  EXPECT_EQ(r.output.size(), 100003u);  // larger than a pipe buffer
  EXPECT_EQ(r.output.substr(r.output.size() - 3), "end");
}

TEST(Isolation, ChildRunsParallelRegionsAfterTheParentDid) {
  ASSERT_EQ(parallel_team_size(3), 3);  // the parent's thread pool now exists
  ChildResult r = run_in_child([] { return std::to_string(parallel_team_size(3)); }, 10);
  ASSERT_TRUE(r.succeeded()) << r.describe();
  EXPECT_EQ(r.output, "3");
  EXPECT_EQ(parallel_team_size(3), 3);  // and the parent's still works
}

TEST(Isolation, CrashIsReportedWithItsSignal) {
  ChildResult r = run_in_child([]() -> std::string {
    std::signal(SIGSEGV, SIG_DFL);  // sanitizers would catch it and exit 1 instead
    std::raise(SIGSEGV);
    return "unreachable";
  }, 10);
  EXPECT_EQ(r.end, ChildResult::End::Signaled);
  EXPECT_EQ(r.signal, SIGSEGV);
  EXPECT_NE(r.describe().find("signal 11"), std::string::npos) << r.describe();
}

TEST(Isolation, AbortKeepsTheChildsLastWords) {
  ChildResult r = run_in_child([]() -> std::string {
    std::fputs("invariant broken: tile 3 of 2\n", stderr);
    std::abort();
  }, 10);
  EXPECT_EQ(r.end, ChildResult::End::Signaled);
  EXPECT_EQ(r.signal, SIGABRT);
  EXPECT_NE(r.describe().find("invariant broken: tile 3 of 2"), std::string::npos) << r.describe();
}

TEST(Isolation, ExceptionBecomesAnExitCodeWithItsMessage) {
  ChildResult r = run_in_child([]() -> std::string { throw std::runtime_error("no scratch left"); }, 10);
  EXPECT_EQ(r.end, ChildResult::End::Exited);
  EXPECT_EQ(r.exit_code, kWorkThrewExitCode);
  EXPECT_FALSE(r.succeeded());
  EXPECT_NE(r.describe().find("no scratch left"), std::string::npos) << r.describe();
}

TEST(Isolation, HangIsKilledAtTheTimeout) {
  ChildResult r = run_in_child([]() -> std::string {
    for (;;) std::this_thread::sleep_for(std::chrono::seconds(1));
  }, 0.2);
  EXPECT_EQ(r.end, ChildResult::End::TimedOut);
  EXPECT_NE(r.describe().find("no result within 0.2 s"), std::string::npos) << r.describe();
}

TEST(Isolation, HangAfterClosingOutputIsStillATimeout) {
  ChildResult r = run_in_child([]() -> std::string {
    std::fclose(stderr);
    for (;;) std::this_thread::sleep_for(std::chrono::seconds(1));
  }, 0.2);
  EXPECT_EQ(r.end, ChildResult::End::TimedOut);
}

TEST(Isolation, ParentGoesOnAfterManyFailedChildren) {
  for (int i = 0; i < 5; ++i) {
    EXPECT_EQ(run_in_child([]() -> std::string { std::abort(); }, 10).end,
              ChildResult::End::Signaled);
    EXPECT_EQ(run_in_child([] { return std::string("ok"); }, 10).output, "ok");
  }
}

// ---- spawned ---------------------------------------------------------------------------

ChildResult shell(const std::string& script, const std::string& request = "", double timeout_s = 10) {
  return run_in_worker("/bin/sh", {"-c", script}, request, timeout_s);
}

TEST(Worker, ReadsTheRequestAndReturnsWhatItPrints) {
  std::string request = std::string(200000, 'r') + "end";  // larger than a pipe buffer
  ChildResult r = shell("cat", request);
  ASSERT_TRUE(r.succeeded()) << r.describe();
  EXPECT_EQ(r.output, request);
}

TEST(Worker, GetsItsArguments) {
  ChildResult r = run_in_worker("/bin/sh", {"-c", "echo \"$0|$1\"", "first arg", "second"}, "", 10);
  ASSERT_TRUE(r.succeeded()) << r.describe();
  EXPECT_EQ(r.output, "first arg|second\n");
}

TEST(Worker, CrashIsReportedWithItsSignal) {
  ChildResult r = shell("kill -SEGV $$");
  EXPECT_EQ(r.end, ChildResult::End::Signaled);
  EXPECT_EQ(r.signal, SIGSEGV);
  EXPECT_NE(r.describe().find("signal 11"), std::string::npos) << r.describe();
}

TEST(Worker, ExitCodeKeepsItsLastWords) {
  ChildResult r = shell("echo 'no scratch left' >&2; exit 70");
  EXPECT_EQ(r.end, ChildResult::End::Exited);
  EXPECT_EQ(r.exit_code, kWorkThrewExitCode);
  EXPECT_NE(r.describe().find("no scratch left"), std::string::npos) << r.describe();
}

TEST(Worker, HangIsKilledAtTheTimeout) {
  ChildResult r = shell("exec sleep 100", "", 0.2);
  EXPECT_EQ(r.end, ChildResult::End::TimedOut);
  EXPECT_NE(r.describe().find("no result within 0.2 s"), std::string::npos) << r.describe();
}

TEST(Worker, MissingExecutableIsAnIoError) {
  try {
    run_in_worker("/nonexistent/pto-tune-worker", {}, "", 10);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.category(), ErrorCategory::Io);
    EXPECT_NE(std::string(e.what()).find("/nonexistent/pto-tune-worker"), std::string::npos) << e.what();
  }
}

TEST(Worker, CallsFromManyThreadsGetTheirOwnResults) {
  std::vector<std::thread> threads;
  std::atomic<int> right{0};
  for (int t = 0; t < 6; ++t)
    threads.emplace_back([&, t] {
      if (t == 0) {  // one hangs meanwhile
        right += shell("exec sleep 100", "", 0.5).end == ChildResult::End::TimedOut;
        return;
      }
      std::string request = std::string(70000 + t, 'a' + t);
      ChildResult r = shell("cat", request);
      right += r.succeeded() && r.output == request;
    });
  for (auto& th : threads) th.join();
  EXPECT_EQ(right.load(), 6);
}

class WorkerLocation : public ::testing::Test {
 protected:
  void TearDown() override { unsetenv("PTO_TUNE_WORKER"); }
};

TEST_F(WorkerLocation, TheBuildsWorkerIsFound) {
  unsetenv("PTO_TUNE_WORKER");
  std::filesystem::path found = worker_executable();
  EXPECT_EQ(found.filename(), "pto-tune-worker");
  EXPECT_TRUE(std::filesystem::exists(found)) << found;
}

TEST_F(WorkerLocation, TheEnvironmentOverridesAndIsChecked) {
  setenv("PTO_TUNE_WORKER", "/bin/sh", 1);
  EXPECT_EQ(worker_executable(), "/bin/sh");
  setenv("PTO_TUNE_WORKER", "/nonexistent/worker", 1);
  try {
    worker_executable();
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.category(), ErrorCategory::Io);
    EXPECT_NE(std::string(e.what()).find("/nonexistent/worker"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace pto::measure
