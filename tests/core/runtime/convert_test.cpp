// The runtime's dtype conversions of GM rows against the scalar conversions.

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

TEST(RuntimeConvert, Fp16AndBf16RowsMatchTheScalarConversions) {
  std::mt19937 rng(3);
  std::vector<float> f(4099);
  for (float& v : f) v = std::bit_cast<float>(static_cast<uint32_t>(rng()));  // every class of value
  f[0] = 65520.0f;  // rounds to fp16 inf
  f[1] = 5.96e-8f;  // fp16 subnormal
  for (DType t : {DType::F16, DType::BF16}) {
    std::vector<uint16_t> bits(f.size());
    runtime::store_row(bits.data(), t, 1, f.data(), static_cast<int64_t>(f.size()), false);
    std::vector<float> back(f.size());
    runtime::load_row(back.data(), bits.data(), t, 1, static_cast<int64_t>(f.size()));
    for (size_t i = 0; i < f.size(); ++i) {
      const uint16_t want = t == DType::F16 ? float_to_fp16(f[i]) : float_to_bf16(f[i]);
      if (std::isnan(f[i])) {
        EXPECT_TRUE(std::isnan(back[i]));
        continue;
      }
      ASSERT_EQ(bits[i], want) << dtype_name(t) << " of " << f[i];
      EXPECT_EQ(std::bit_cast<uint32_t>(back[i]),
                std::bit_cast<uint32_t>(t == DType::F16 ? fp16_to_float(want) : bf16_to_float(want)));
    }
    std::vector<float> rounded(f);
    runtime::round_to_dtype(rounded.data(), static_cast<int64_t>(rounded.size()), t);
    for (size_t i = 0; i < f.size(); ++i) {
      if (std::isnan(f[i])) continue;
      EXPECT_EQ(std::bit_cast<uint32_t>(rounded[i]), std::bit_cast<uint32_t>(back[i]));
    }
  }
}

TEST(RuntimeConvert, IntegersRoundToNearestEvenAndSaturate) {
  const float f[] = {2.5f, 3.5f, -2.5f, 1e10f, -1e10f, std::numeric_limits<float>::quiet_NaN(), 200.0f};
  int32_t i32[7];
  runtime::store_row(i32, DType::I32, 1, f, 7, false);
  EXPECT_EQ(std::vector<int32_t>(i32, i32 + 7),
            (std::vector<int32_t>{2, 4, -2, 2147483647, -2147483647 - 1, 0, 200}));
  int8_t i8[7];
  runtime::store_row(i8, DType::I8, 1, f, 7, false);
  EXPECT_EQ(i8[6], 127);
  EXPECT_EQ(i8[4], -128);
  // Strided and broadcast loads.
  const uint16_t h[] = {float_to_fp16(1.0f), 0, float_to_fp16(2.0f), 0, float_to_fp16(3.0f)};
  float out[3];
  runtime::load_row(out, h, DType::F16, 2, 3);
  EXPECT_EQ(std::vector<float>(out, out + 3), (std::vector<float>{1, 2, 3}));
  runtime::load_row(out, h, DType::F16, 0, 3);
  EXPECT_EQ(std::vector<float>(out, out + 3), (std::vector<float>{1, 1, 1}));
}

}  // namespace
}  // namespace pto
