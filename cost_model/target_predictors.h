// TargetPredictors: the predictors (cost_model/predictor.h) of many graphs on a few
// targets, as the JIT's lookups price shape after shape (db/config_lookup.h's transfer,
// search/model_pick.h). Each target's model has the calibrated coefficients of the
// first of PredictorSources::backends that `pto-tune calibrate` fitted for it (the
// datasheet defaults when none did), and each op on a target the correction stored for
// the first of those backends that has one (PredictorSources::corrections, read from the
// tuning database), so the JIT ranks with what the tuner learned. Made once and reused:
// an op's first predictor on a target is kept and every later graph's made from it
// (Predictor::for_graph), so a target's description is hashed, its calibration read and
// the op's correction fitted once, not per shape. Targets are identified by name within
// one instance (a process that changes a target's description under the same name makes
// a new one). Thread-safe; what a lookup gets is a function of the sources and the
// target alone.
#pragma once

#include <map>
#include <optional>
#include <shared_mutex>
#include <string>
#include <utility>
#include <vector>

#include "core/target.h"
#include "core/tensor_graph.h"
#include "cost_model/calibration_store.h"
#include "cost_model/correction.h"
#include "cost_model/predictor.h"

namespace pto {

// What a TargetPredictors predicts with (declared outside it: its default arguments
// need it complete).
struct PredictorSources {
  // Whose calibration and correction count, most trusted first (the JIT serves the time
  // of the hardware before a simulation of it).
  std::vector<std::string> backends = {"npu", "cpu", "sim"};
  // Where calibrations are looked for (cost_model/calibration_store.h); empty: none, the
  // datasheet defaults.
  std::string calibration_dir = default_calibration_dir();
  std::map<CorrectionKey, Correction> corrections;
};

class TargetPredictors {
 public:
  using Sources = PredictorSources;

  explicit TargetPredictors(Sources sources = {}) : sources_(std::move(sources)) {}

  // The predictor of `graph` (of op `op`) on `t`; nullopt where the model cannot
  // describe the target for this graph (a rate it divides by is not positive, no Cube
  // fractal for a matmul's dtype).
  std::optional<Predictor> for_graph(const TensorGraph& graph, const Target& t, const std::string& op);

 private:
  // The kept predictor of (target name, op), made from `graph` on first use; throws
  // where the model cannot describe the target for it.
  const Predictor& kept(const TensorGraph& graph, const Target& t, const std::string& op);
  Predictor make(const TensorGraph& graph, const Target& t, const std::string& op) const;

  Sources sources_;
  std::shared_mutex mutex_;
  std::map<std::pair<std::string, std::string>, Predictor> by_target_op_;  // never erased
};

}  // namespace pto
