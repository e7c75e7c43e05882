// The runtime's fp32 math functions against std within fp32 rounding.

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

struct MathCase {
  runtime::MathFn fn;
  const char* name;
  double (*ref)(double);
};

const MathCase kMath[] = {
    {runtime::MathFn::Exp, "exp", [](double x) { return std::exp(x); }},
    {runtime::MathFn::Log, "log", [](double x) { return std::log(x); }},
    {runtime::MathFn::Erf, "erf", [](double x) { return std::erf(x); }},
    {runtime::MathFn::Erfc, "erfc", [](double x) { return std::erfc(x); }},
    {runtime::MathFn::Tanh, "tanh", [](double x) { return std::tanh(x); }},
    {runtime::MathFn::Sqrt, "sqrt", [](double x) { return std::sqrt(x); }},
    {runtime::MathFn::Rsqrt, "rsqrt", [](double x) { return 1 / std::sqrt(x); }},
};

TEST(RuntimeMath, MatchesStdWithinFp32Rounding) {
  std::mt19937 rng(7);
  std::vector<float> x;
  for (int i = 0; i < 200000; ++i) {
    const float mantissa = std::uniform_real_distribution<float>(-1, 1)(rng);
    x.push_back(mantissa * std::pow(10.0f, std::uniform_real_distribution<float>(-6, 2.1f)(rng)));
  }
  const float inf = std::numeric_limits<float>::infinity();
  for (float special : {0.0f, -0.0f, inf, -inf, std::numeric_limits<float>::quiet_NaN(), 1e-40f, -1e-40f,
                        88.0f, 89.0f, -103.0f, -110.0f, 2.0f, -2.0f, 12.5f, -12.5f, 1e-5f})
    x.push_back(special);
  for (const MathCase& m : kMath) {
    std::vector<float> y(x.size());
    runtime::apply_math(m.fn, y.data(), x.data(), static_cast<int64_t>(x.size()));
    double worst = 0;
    for (size_t i = 0; i < x.size(); ++i) {
      const double want = m.ref(x[i]);
      const float want_f = static_cast<float>(want);
      if (std::isnan(want_f)) {
        EXPECT_TRUE(std::isnan(y[i])) << m.name << "(" << x[i] << ") = " << y[i];
        continue;
      }
      if (std::isinf(want_f)) {
        EXPECT_EQ(y[i], want_f) << m.name << "(" << x[i] << ")";
        continue;
      }
      if (std::fabs(want) < 1e-37) {  // fp32 subnormal results: absolute error only
        EXPECT_NEAR(y[i], want_f, 1e-44) << m.name << "(" << x[i] << ")";
        continue;
      }
      worst = std::max(worst, std::fabs(y[i] - want) / std::fabs(want));
    }
    EXPECT_LT(worst, 1.5e-7) << m.name;
  }
}

TEST(RuntimeMath, WorksInPlaceAndOnShortRows) {
  std::vector<float> x = {0.5f, 1.5f, -2.0f};
  runtime::apply_math(runtime::MathFn::Exp, x.data(), x.data(), 3);
  EXPECT_FLOAT_EQ(x[0], std::exp(0.5f));
  EXPECT_FLOAT_EQ(x[2], std::exp(-2.0f));
  EXPECT_FLOAT_EQ(runtime::apply_math(runtime::MathFn::Tanh, 0.25f), std::tanh(0.25f));
}

}  // namespace
}  // namespace pto
