// TimeTerms: a predicted time kept as a linear form in the model's coefficients.
//
// Every term the cost model adds is `coefficient × amount` for exactly one coefficient,
// and the model combines terms only by sums, positive scaling and maxima. So a
// prediction is Σ_j c_j · amount_j, where the amounts depend on the coefficients only
// through which side of each max won. Keeping the amounts next to the value gives
// calibration its Jacobian for free: the same code that predicts also linearises.
//
// TimeValue is the same time without the amounts, for the code that only ranks (the
// tuner scores hundreds of thousands of candidates): the model's formulas are written
// once, as templates over the two (cost_model/estimate.cpp), and a TimeValue's value is
// exactly its TimeTerms' value.
#pragma once

#include <array>

#include "cost_model/coefficients.h"

namespace pto {

class TimeTerms {
 public:
  TimeTerms() = default;

  // `amount` of the time that coefficient `which` scales, valued under `c`.
  static TimeTerms term(const Coefficients& c, Coef which, double amount) {
    TimeTerms t;
    t.amounts_[static_cast<int>(which)] = amount;
    t.value_ = c[which] * amount;
    return t;
  }

  double value() const { return value_; }
  double amount(Coef which) const { return amounts_[static_cast<int>(which)]; }

  TimeTerms& operator+=(const TimeTerms& o) {
    for (int i = 0; i < kNumCoefs; ++i) amounts_[i] += o.amounts_[i];
    value_ += o.value_;
    return *this;
  }
  TimeTerms& operator-=(const TimeTerms& o) {
    for (int i = 0; i < kNumCoefs; ++i) amounts_[i] -= o.amounts_[i];
    value_ -= o.value_;
    return *this;
  }
  TimeTerms& operator*=(double s) {
    for (double& a : amounts_) a *= s;
    value_ *= s;
    return *this;
  }
  friend TimeTerms operator+(TimeTerms a, const TimeTerms& b) { return a += b; }
  friend TimeTerms operator-(TimeTerms a, const TimeTerms& b) { return a -= b; }
  friend TimeTerms operator*(TimeTerms a, double s) { return a *= s; }
  friend TimeTerms operator*(double s, TimeTerms a) { return a *= s; }
  // The larger under the coefficients it was valued with (ties: the first).
  friend const TimeTerms& max(const TimeTerms& a, const TimeTerms& b) {
    return a.value_ >= b.value_ ? a : b;
  }

 private:
  std::array<double, kNumCoefs> amounts_{};
  double value_ = 0;
};

class TimeValue {
 public:
  TimeValue() = default;
  explicit TimeValue(const TimeTerms& t) : value_(t.value()) {}

  static TimeValue term(const Coefficients& c, Coef which, double amount) {
    TimeValue t;
    t.value_ = c[which] * amount;
    return t;
  }

  double value() const { return value_; }

  TimeValue& operator+=(const TimeValue& o) { value_ += o.value_; return *this; }
  TimeValue& operator-=(const TimeValue& o) { value_ -= o.value_; return *this; }
  TimeValue& operator*=(double s) { value_ *= s; return *this; }
  friend TimeValue operator+(TimeValue a, const TimeValue& b) { return a += b; }
  friend TimeValue operator-(TimeValue a, const TimeValue& b) { return a -= b; }
  friend TimeValue operator*(TimeValue a, double s) { return a *= s; }
  friend TimeValue operator*(double s, TimeValue a) { return a *= s; }
  friend const TimeValue& max(const TimeValue& a, const TimeValue& b) { return a.value_ >= b.value_ ? a : b; }

 private:
  double value_ = 0;
};

}  // namespace pto
