// parallel_for: runs body(i) for i in [0, n) on OpenMP's threads and rethrows the first
// exception a body threw once all have finished. An exception must not leave an
// OpenMP region (the program would terminate), and the space's scans (analyze, the
// cost model) report bad input by throwing. Below kMinParallel items the loop runs on
// the calling thread: a team costs more than such a loop, and a process forked from
// one that ran a team (a test's child, a batch worker) hangs in its first team.
#pragma once

#include <cstdint>
#include <exception>

namespace pto::search {

inline constexpr int64_t kMinParallel = 4096;

template <typename Body>
void parallel_for(int64_t n, const Body& body) {
  std::exception_ptr failure;
#pragma omp parallel for schedule(dynamic, 256) if (n >= kMinParallel)
  for (int64_t i = 0; i < n; ++i) {
    try {
      body(i);
    } catch (...) {
#pragma omp critical(pto_parallel_for_failure)
      if (!failure) failure = std::current_exception();
    }
  }
  if (failure) std::rethrow_exception(failure);
}

}  // namespace pto::search
