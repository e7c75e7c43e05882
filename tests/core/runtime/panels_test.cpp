// Packing into the Cube's micro-panels against the layout formula.

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

TEST(RuntimePanels, EveryPackingPathMatchesTheLayoutFormula) {
  std::mt19937 rng(11);
  for (int trial = 0; trial < 40; ++trial) {
    const int width = trial % 2 ? runtime::kPanelColsB : runtime::kPanelRowsA;
    const int64_t lanes = 1 + rng() % 40, depth = 1 + rng() % 37;
    const int mode = trial % 3;  // lanes contiguous, depth contiguous, neither
    const int64_t lane_stride = mode == 0 ? 1 : (mode == 1 ? depth + 3 : 2 * depth + 1);
    const int64_t depth_stride = mode == 0 ? lanes + 5 : (mode == 1 ? 1 : 2);
    const DType dtype = trial % 4 == 3 ? DType::F16 : DType::F32;
    const int64_t span = (lanes - 1) * lane_stride + (depth - 1) * depth_stride + 1;
    HostTensor src = random_tensor({span}, dtype, trial);
    std::vector<float> packed(runtime::panel_elements(width, lanes, depth), 42.0f);
    const runtime::Panels dst{packed.data(), width, width * depth};
    runtime::pack_panels(dst, lanes, depth, src.data(), dtype, lane_stride, depth_stride);
    for (int64_t l = 0; l < align_up(lanes, width); ++l)
      for (int64_t p = 0; p < depth; ++p) {
        const double want = l < lanes ? src.get(l * lane_stride + p * depth_stride) : 0.0;
        ASSERT_EQ(dst.at(l, p), static_cast<float>(want)) << "trial " << trial << " lane " << l << " depth " << p;
      }
  }
}

TEST(RuntimePanels, RepackCopiesAnySubWindowAndZeroesThePad) {
  std::mt19937 rng(13);
  for (int trial = 0; trial < 20; ++trial) {
    const int width = trial % 2 ? runtime::kPanelColsB : runtime::kPanelRowsA;
    const int64_t lanes_cap = 1 + rng() % 50, depth_cap = 1 + rng() % 40;
    std::vector<float> src_buf(runtime::panel_elements(width, lanes_cap, depth_cap));
    for (float& v : src_buf) v = static_cast<float>(rng() % 1000);
    const runtime::Panels src{src_buf.data(), width, width * depth_cap};
    // Every other trial starts on a panel boundary (the contiguous path).
    const int64_t lane0 = trial % 4 < 2 ? (rng() % (lanes_cap / width + 1)) * width % lanes_cap : rng() % lanes_cap;
    const int64_t depth0 = rng() % depth_cap;
    const int64_t lanes = 1 + rng() % (lanes_cap - lane0), depth = 1 + rng() % (depth_cap - depth0);
    std::vector<float> dst_buf(runtime::panel_elements(width, lanes, depth), 42.0f);
    const runtime::Panels dst{dst_buf.data(), width, width * depth};
    runtime::repack_panels(dst, src, lane0, depth0, lanes, depth);
    for (int64_t l = 0; l < align_up(lanes, width); ++l)
      for (int64_t p = 0; p < depth; ++p)
        ASSERT_EQ(dst.at(l, p), l < lanes ? src.at(lane0 + l, depth0 + p) : 0.0f) << "trial " << trial;
  }
}

}  // namespace
}  // namespace pto
