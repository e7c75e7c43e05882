// Strided iteration: window alignment (broadcast, same elements) and row merging.

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

TEST(RuntimeStrided, AlignsBroadcastAndSameElementWindows) {
  const auto dims = [](Shape s) { return runtime::Dims::of(s); };
  // [1, 8] broadcast over [4, 8]; a missing leading dim too.
  runtime::Dims st = runtime::align_strides(dims({4, 8}), dims({1, 8}), dims({8, 1}), runtime::Match::Broadcast, "t");
  EXPECT_EQ(st.shape(), (Shape{0, 1}));
  st = runtime::align_strides(dims({4, 8}), dims({8}), dims({1}), runtime::Match::Broadcast, "t");
  EXPECT_EQ(st.shape(), (Shape{0, 1}));
  // A GM row [8] stored from a UB column [8, 1] keeps its order rather than broadcasting.
  st = runtime::align_strides(dims({8}), dims({8, 1}), dims({16, 1}), runtime::Match::SameElements, "t");
  EXPECT_EQ(st.shape(), (Shape{16}));
  expect_error([&] { runtime::align_strides(dims({4, 8}), dims({3, 8}), dims({8, 1}), runtime::Match::Broadcast, "the op"); },
               ErrorCategory::Internal, {"the op", "[3,8]", "[4,8]"});
}

TEST(RuntimeStrided, RowsMergeContiguousDims) {
  std::vector<float> buf(4 * 6, 0);
  runtime::View v{reinterpret_cast<char*>(buf.data()), DType::F32, runtime::Dims::of({6, 1})};
  int rows = 0;
  int64_t total = 0;
  // A [4, 6] window of a [4, 6] buffer is one row of 24.
  runtime::for_each_row<1>(runtime::Dims::of({4, 6}), {&v}, [&](auto&, int64_t n, auto&) {
    ++rows;
    total += n;
  });
  EXPECT_EQ(rows, 1);
  EXPECT_EQ(total, 24);
  // A [4, 3] window of it is four rows of 3.
  rows = 0;
  runtime::for_each_row<1>(runtime::Dims::of({4, 3}), {&v}, [&](auto&, int64_t n, auto&) {
    ++rows;
    EXPECT_EQ(n, 3);
  });
  EXPECT_EQ(rows, 4);
}

}  // namespace
}  // namespace pto
