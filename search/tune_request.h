// TuneRequest: one tuning job as a front-end asks for it, and resolve(), the one place
// that turns it into what search::tune (or a TuningSession) runs. `pto-tune tune`,
// `pto-tune batch` (per workload), `pto-tune plan` and pto_tune.tune all come here, so
// they share one rule per field, one backend default, one way to make the runners and
// the same calibrated coefficients (TVM MetaSchedule's TaskScheduler::Tune takes one
// configuration the same way; front-ends only fill it in).
//
// The rules, each a function the front-ends' own flags use too:
//   strategy     one of strategy_names()
//   budget       0 = the strategy decides; otherwise at least 2 (the default config is
//                one measurement, and a search needs one more); negative refused
//   time limit   finite seconds >= 0; 0 = none
//   workload     its graph builds (a shape that does not fit the op)
//   backend      measure::check_backend: known, fits the target, has its measure command
// A broken rule is a usage Error naming the field as the caller spells it (FieldNames:
// `--budget` for the CLI, `budget` for Python; a backend's own message names it) and the
// bad value; nothing is opened, created or measured before every field has passed.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>

#include "core/target.h"
#include "core/workload.h"
#include "measure/runner.h"
#include "search/tuner.h"

namespace pto::search {

struct TuneRequest {
  TuneRequest(Workload w, Target t) : workload(std::move(w)), target(std::move(t)) {}

  Workload workload;
  Target target;
  std::optional<std::string> backend;  // none: the target's default (measure::default_backend)
  std::string strategy = "auto";
  int64_t budget = 0;
  double time_limit_s = 0;
  uint64_t seed = 1;                   // of the search and of the runners' input data
  bool retune = false;
  // How candidates are timed, and for backend command or npu the measure command or
  // function. Its seed is the request's; its coefficients, when absent, the resolved ones.
  measure::RunnerOptions runner;
};

// How the caller's users spell each field, for the messages.
struct FieldNames {
  std::string strategy = "strategy", budget = "budget", time_limit = "time limit";
};

// What a request resolves to. `options.finalist_runner` points into `runners`, which
// must outlive every tune that uses the options (moving a ResolvedTune keeps it valid).
// options.stop and options.progress are the caller's to set.
struct ResolvedTune {
  std::string backend;
  measure::TuningRunners runners;
  TuneOptions options;
  bool calibrated = false;  // `pto-tune calibrate` has fitted the model for (target, predicted backend)
};

// The request checked field by field (see the head comment) and resolved: the backend
// default picked, the runners made and the calibrated coefficients for the target and
// the backend the model predicts loaded (cost_model/calibration_store.h).
ResolvedTune resolve(const TuneRequest& request, const FieldNames& names = {});

// The one default element type of a workload that names none (every command, a batch
// entry without a dtype): fp16 on an NPU target (what PyPTO operators use), fp32 on the
// host (what its runtime computes in).
DType default_dtype(const Target& target);

// Every field's rule alone, for a front-end that checks before it has a whole request
// (the batch's flags before its file is read). Each throws the usage Error above.
void check_strategy(const std::string& strategy, const std::string& field = "strategy");
void check_budget(int64_t budget, const std::string& field = "budget");
void check_time_limit(double seconds, const std::string& field = "time limit");
// Every rule of the request, nothing made; returns the backend it resolves to.
std::string check(const TuneRequest& request, const FieldNames& names = {});

}  // namespace pto::search
