// Child-process isolation: results come back, and a crash, an abort, a throw or a hang
// in the child becomes a described failure while the parent carries on — including
// after the parent has used OpenMP, which a plain fork does not survive.
#include <omp.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <thread>

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace pto::measure
