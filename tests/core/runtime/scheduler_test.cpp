// The task scheduler alone: dispatch order and dependency/barrier order under threads.

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <functional>
#include <cmath>
#include <limits>
#include <optional>
#include <random>
#include <sstream>

#include "core/cpu_runtime.h"
#include "core/error.h"
#include "core/runtime/decoded_block.h"
#include "core/runtime/convert.h"
#include "core/runtime/microkernel.h"
#include "core/runtime/panels.h"
#include "core/runtime/scheduler.h"
#include "core/runtime/strided.h"
#include "core/runtime/vec_math.h"
#include "tests/core/error_testing.h"
#include "tests/core/graph_eval.h"
#include "tests/core/runtime/runtime_programs.h"

namespace pto {
namespace {

using namespace testing;

// The scheduler alone: dispatch order with one thread, and with two, no task starts
// before its dependencies and its kernel's `after` kernels have finished.
Program task_graph(std::mt19937& rng) {
  ProgramBuilder pb;
  pb.block("empty");
  const int kernels = 5;
  for (int k = 0; k < kernels; ++k) {
    std::vector<int> after;
    for (int a = 0; a < k; ++a)
      if (rng() % 3 == 0) after.push_back(a);
    pb.kernel("k", after);
    const int first = static_cast<int>(pb.p.tasks.size());
    const int n = static_cast<int>(rng() % 6);  // kernels without tasks too
    for (int t = 0; t < n; ++t) {
      std::vector<int> deps;
      for (int d = first; d < first + t; ++d)
        if (rng() % 3 == 0) deps.push_back(d);
      pb.task(k, {}, deps);
    }
    std::shuffle(pb.p.kernels[k].tasks.begin(), pb.p.kernels[k].tasks.end(), rng);  // dispatch order != ids
  }
  return pb.p;
}

TEST(RuntimeScheduler, OneThreadFollowsDispatchOrder) {
  ProgramBuilder pb;
  pb.block("empty");
  const int k0 = pb.kernel("first");
  for (int i = 0; i < 4; ++i) pb.task(k0, {});
  const int k1 = pb.kernel("second", {k0});
  pb.task(k1, {});
  pb.task(k1, {}, {4});
  pb.p.kernels[k0].tasks = {2, 0, 3, 1};
  std::vector<int> order;
  runtime::TaskScheduler(pb.p).run(1, [&](int task, int) { order.push_back(task); });
  EXPECT_EQ(order, (std::vector<int>{2, 0, 3, 1, 4, 5}));
}

TEST(RuntimeScheduler, TwoThreadsRespectDependenciesAndBarriers) {
  std::mt19937 rng(19);
  for (int trial = 0; trial < 30; ++trial) {
    const Program p = task_graph(rng);
    std::vector<std::atomic<int>> done(p.tasks.size());
    std::atomic<int> runs{0};
    std::atomic<bool> early{false};
    runtime::TaskScheduler(p).run(2, [&](int task, int) {
      for (int d : p.tasks[task].deps) early = early || !done[d];
      for (int a : p.kernels[p.tasks[task].kernel].after)
        for (int t : p.kernels[a].tasks) early = early || !done[t];
      ++runs;
      done[task] = 1;
    });
    EXPECT_FALSE(early) << "trial " << trial;
    EXPECT_EQ(runs, static_cast<int>(p.tasks.size()));
  }
}

}  // namespace
}  // namespace pto
