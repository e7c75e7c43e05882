// HostTensor storage per dtype, seeded random fill, and the verification comparisons.
#include "core/host_tensor.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <set>

#include <gtest/gtest.h>

#include "core/error.h"

namespace pto {
namespace {

const DType kAllDTypes[] = {DType::F32, DType::F16, DType::BF16, DType::I32, DType::I8, DType::Bool};

HostTensor filled(DType t, std::initializer_list<double> values) {
  HostTensor out({static_cast<int64_t>(values.size())}, t);
  int64_t i = 0;
  for (double v : values) out.set(i++, v);
  return out;
}

TEST(HostTensor, ZeroFilledWithTheDTypesByteSize) {
  for (DType t : kAllDTypes) {
    HostTensor x({3, 5, 2}, t);
    EXPECT_EQ(x.size(), 30);
    EXPECT_EQ(x.bytes(), 30 * dtype_size(t));
    for (int64_t i = 0; i < x.size(); ++i) ASSERT_EQ(x.get(i), 0.0);
  }
  EXPECT_EQ(HostTensor({}, DType::F32).size(), 1);  // rank 0: a scalar
  EXPECT_EQ(HostTensor({4, 0}, DType::F32).bytes(), 0);
}

TEST(HostTensor, SetRoundsToTheDType) {
  const double third = 1.0 / 3.0;
  EXPECT_EQ(filled(DType::F32, {third}).get(0), static_cast<double>(static_cast<float>(third)));
  EXPECT_EQ(filled(DType::F16, {third}).get(0), fp16_to_float(double_to_fp16(third)));
  EXPECT_EQ(filled(DType::BF16, {third}).get(0), bf16_to_float(double_to_bf16(third)));

  // Integers round to nearest even and saturate; NaN becomes 0.
  const HostTensor i32 = filled(DType::I32, {2.5, 3.5, -2.5, 1e12, -1e12, NAN, 7.49});
  const double i32_expected[] = {2, 4, -2, 2147483647.0, -2147483648.0, 0, 7};
  for (int i = 0; i < 7; ++i) EXPECT_EQ(i32.get(i), i32_expected[i]) << i;
  const HostTensor i8 = filled(DType::I8, {300, -300, -128, 127, 0.5});
  const double i8_expected[] = {127, -128, -128, 127, 0};
  for (int i = 0; i < 5; ++i) EXPECT_EQ(i8.get(i), i8_expected[i]) << i;
  const HostTensor b = filled(DType::Bool, {0, -3, 0.25});
  EXPECT_EQ(b.get(0), 0);
  EXPECT_EQ(b.get(1), 1);
  EXPECT_EQ(b.get(2), 1);
}

TEST(HostTensor, Fp16IsStoredAsItsBitPattern) {
  const HostTensor x = filled(DType::F16, {1.0, -2.0});
  uint16_t raw[2];
  std::memcpy(raw, x.data(), sizeof raw);
  EXPECT_EQ(raw[0], 0x3c00);
  EXPECT_EQ(raw[1], 0xc000);
}

TEST(HostTensor, RandomIsDeterministicPerSeedAndInRange) {
  for (DType t : kAllDTypes) {
    const HostTensor a = HostTensor::random({17, 33}, t, 5, -3.0, 4.0);
    const HostTensor b = HostTensor::random({17, 33}, t, 5, -3.0, 4.0);
    const HostTensor c = HostTensor::random({17, 33}, t, 6, -3.0, 4.0);
    ASSERT_EQ(std::memcmp(a.data(), b.data(), a.bytes()), 0) << dtype_name(t);
    EXPECT_NE(std::memcmp(a.data(), c.data(), a.bytes()), 0) << dtype_name(t);
    std::set<double> seen;
    for (int64_t i = 0; i < a.size(); ++i) {
      const double v = a.get(i);
      seen.insert(v);
      if (t == DType::Bool) continue;
      ASSERT_GE(v, -3.0) << dtype_name(t);
      ASSERT_LE(v, 4.0) << dtype_name(t);  // fp16/bf16 rounding may reach hi itself
      if (!is_float(t)) {
        ASSERT_EQ(v, std::nearbyint(v));
      }
    }
    // Integers cover every value of [-3, 4); floats are (nearly) all distinct.
    if (t == DType::I32 || t == DType::I8) {
      EXPECT_EQ(seen.size(), 7u) << dtype_name(t);
    } else if (t == DType::F32) {
      EXPECT_GT(seen.size(), 550u);
    } else if (t == DType::Bool) {
      EXPECT_EQ(seen.size(), 2u);
    }
  }
}

TEST(HostTensor, RandomRejectsEmptyRanges) {
  EXPECT_THROW(HostTensor::random({4}, DType::F32, 1, 1.0, 1.0), Error);
  EXPECT_THROW(HostTensor::random({4}, DType::I32, 1, 0.2, 0.8), Error);
}

TEST(HostTensor, BadShapesAndIndicesAreErrors) {
  try {
    HostTensor({3, -1}, DType::F32);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.category(), ErrorCategory::Usage);
    EXPECT_NE(std::string(e.what()).find("[3,-1]"), std::string::npos) << e.what();
  }
  HostTensor x({2, 2}, DType::F32);
  EXPECT_THROW(x.get(4), Error);
  EXPECT_THROW(x.set(-1, 0.0), Error);
}

TEST(MaxAbsDiff, ComparesValuesAcrossDTypesAndSpecials) {
  EXPECT_EQ(max_abs_diff(filled(DType::F32, {1, 2, 3}), filled(DType::F32, {1, 2.5, 2})), 1.0);
  EXPECT_EQ(max_abs_diff(filled(DType::F16, {1, 2}), filled(DType::I32, {1, 2})), 0.0);
  const double inf = std::numeric_limits<double>::infinity();
  EXPECT_EQ(max_abs_diff(filled(DType::F32, {NAN, inf, -inf}), filled(DType::F32, {NAN, inf, -inf})), 0.0);
  EXPECT_EQ(max_abs_diff(filled(DType::F32, {NAN}), filled(DType::F32, {1})), inf);
  EXPECT_EQ(max_abs_diff(filled(DType::F32, {inf}), filled(DType::F32, {1})), inf);
  EXPECT_EQ(max_abs_diff(filled(DType::F32, {inf}), filled(DType::F32, {-inf})), inf);
  try {
    max_abs_diff(HostTensor({2, 3}, DType::F32), HostTensor({3, 2}, DType::F32));
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.category(), ErrorCategory::Usage);
    EXPECT_NE(std::string(e.what()).find("[2,3] vs [3,2]"), std::string::npos) << e.what();
  }
}

// Expected values spread over magnitudes; `actual` is off by `rel` relative error.
bool close_with_relative_error(DType t, double rel, int64_t accumulation = 1) {
  HostTensor expected({64}, t), actual({64}, t);
  for (int64_t i = 0; i < 64; ++i) {
    const double v = (i % 2 ? -1 : 1) * std::ldexp(1.0 + i / 64.0, static_cast<int>(i % 5) - 2);
    expected.set(i, v);
    actual.set(i, expected.get(i) * (1 + rel));
  }
  return all_close(actual, expected, accumulation);
}

TEST(AllClose, TolerancesFollowTheDType) {
  EXPECT_TRUE(close_with_relative_error(DType::F32, 3e-6));
  EXPECT_FALSE(close_with_relative_error(DType::F32, 1e-4));
  EXPECT_TRUE(close_with_relative_error(DType::F16, 1e-3));  // one fp16 ulp
  EXPECT_FALSE(close_with_relative_error(DType::F16, 1e-2));
  EXPECT_TRUE(close_with_relative_error(DType::BF16, 7.8e-3));  // one bf16 ulp
  EXPECT_FALSE(close_with_relative_error(DType::BF16, 5e-2));
  // Accumulations loosen by sqrt(length).
  EXPECT_FALSE(close_with_relative_error(DType::F32, 5e-5));
  EXPECT_TRUE(close_with_relative_error(DType::F32, 5e-5, 100));
}

TEST(AllClose, IntegersAreExactAndSpecialsMatchThemselves) {
  EXPECT_TRUE(all_close(filled(DType::I32, {5, -7}), filled(DType::I32, {5, -7}), 1000));
  EXPECT_FALSE(all_close(filled(DType::I32, {5, -6}), filled(DType::I32, {5, -7}), 1000));
  EXPECT_TRUE(all_close(filled(DType::F32, {NAN, INFINITY}), filled(DType::F32, {NAN, INFINITY})));
  EXPECT_FALSE(all_close(filled(DType::F32, {NAN}), filled(DType::F32, {0})));
  EXPECT_FALSE(all_close(filled(DType::F32, {INFINITY}), filled(DType::F32, {-INFINITY})));
  // Near zero the absolute part of the tolerance applies.
  EXPECT_TRUE(all_close(filled(DType::F32, {4e-6}), filled(DType::F32, {0})));
  EXPECT_THROW(all_close(HostTensor({2}, DType::F32), HostTensor({3}, DType::F32)), Error);
}

}  // namespace
}  // namespace pto
