// ModelPickProvider: the cost model's pick, the step of the JIT's fallback order
// (core/config_chain.h) after the tuning database (db/config_lookup.h) and before the
// op's default: the predictor's fastest of a seeded sample of the workload's search
// space (search/space_generator.h) and the default — a sample, not the first candidates
// in index order, which are all small tiles. `candidates` of them, so that the pick takes
// milliseconds: 256 cost about 60 ms of CPU for a matmul on ascend910b1
// (results/lookup_latency.md). The same pick every time for the same sources: the
// predictor of cost_model/target_predictors.h, with the target's calibrated
// coefficients where `pto-tune calibrate` fitted some and the op's correction from the
// tuning database where the caller read one (DbConfigProvider::model_sources). It
// answers nothing where the model cannot describe the target or no candidate fits. Not
// memoized (the chain is; the predictors are); thread-safe.
#pragma once

#include <cstddef>
#include <optional>

#include "core/jit.h"
#include "cost_model/target_predictors.h"

namespace pto::search {

class ModelPickProvider : public ConfigProvider {
 public:
  static constexpr size_t kDefaultCandidates = 256;
  // By default: the calibrations in the default folder, no correction.
  explicit ModelPickProvider(TargetPredictors::Sources sources = {}, size_t candidates = kDefaultCandidates);

  std::optional<ConfigChoice> lookup(const Workload& w, const Target& t) override;

 private:
  size_t candidates_;
  TargetPredictors predictors_;
};

}  // namespace pto::search
