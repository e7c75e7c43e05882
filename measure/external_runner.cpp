// The runner every external measurement shares (measure/external_measure.h): screen
// with the cost model, hand the feasible candidates to the transport as one batch,
// and turn each answer into a Measurement that says what measured it.
#include "measure/external_measure.h"

#include <cmath>
#include <sstream>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/op_library.h"
#include "measure/backends.h"
#include "measure/stats.h"

namespace pto::measure {

namespace {

class ExternalRunner : public Runner {
 public:
  ExternalRunner(std::string name, Target target, RunnerOptions options, ExternalMeasurer measurer)
      : name_(std::move(name)), target_(std::move(target)), options_(std::move(options)),
        measurer_(std::move(measurer)) {}

  std::string name() const override { return name_; }

  std::vector<Measurement> measure(const Workload& w, const std::vector<TileConfig>& candidates,
                                   const OnResult& on_result) override {
    return run(w, candidates, false, on_result);
  }

  std::vector<Measurement> measure_interleaved(const Workload& w, const std::vector<TileConfig>& finalists,
                                               const OnResult& on_result) override {
    return run(w, finalists, true, on_result);
  }

 private:
  // One batch: the cost model's verdict on each candidate, then one call of the
  // transport for the feasible ones. Their results are known together, so on_result
  // hears them in order and a stop ends the list there.
  std::vector<Measurement> run(const Workload& w, const std::vector<TileConfig>& candidates, bool interleaved,
                               const OnResult& on_result) {
    const Predictor predictor(CostModel(build_graph(w), target_, *options_.coefficients));
    std::vector<Measurement> results;
    ExternalBatch batch{w, {}, options_.warmup, options_.min_repetitions, interleaved};
    std::vector<size_t> sent;  // index in `results` of each candidate of the batch
    for (size_t i = 0; i < candidates.size(); ++i) {
      results.push_back(predict(predictor, candidates[i], name()).measurement);
      if (!results.back().ok()) continue;
      batch.candidates.push_back({"c" + std::to_string(i), candidates[i]});
      sent.push_back(i);
    }
    if (!sent.empty()) {
      const std::vector<ExternalAnswer> answers = ask(batch);
      for (size_t j = 0; j < sent.size(); ++j) record(answers[j], results[sent[j]]);
    }
    for (size_t i = 0; i < results.size(); ++i) {
      stamp(results[i]);
      if (on_result && !on_result(i, results[i])) {
        results.resize(i + 1);
        break;
      }
    }
    return results;
  }

  // The transport's answers, one per candidate: a transport that failed as a whole
  // gives each candidate its failure.
  std::vector<ExternalAnswer> ask(const ExternalBatch& batch) const {
    ExternalAnswer failed;
    try {
      std::vector<ExternalAnswer> answers = measurer_.measure(batch);
      if (answers.size() == batch.candidates.size()) return answers;
      failed = failed_answer(Status::RUNTIME_ERROR, "the measurer gave " + std::to_string(answers.size()) +
                                                        " answers for " + std::to_string(batch.candidates.size()) +
                                                        " candidates");
    } catch (const ExternalTimeout& e) {
      failed = failed_answer(Status::TIMEOUT, e.what());
    } catch (const std::exception& e) {
      failed = failed_answer(Status::RUNTIME_ERROR, e.what());
    }
    return std::vector<ExternalAnswer>(batch.candidates.size(), failed);
  }

  void record(const ExternalAnswer& answer, Measurement& m) const {
    apply_answer(answer, m);
    nlohmann::json detail{{"measured_by", measurer_.measured_by}};
    if (!answer.device.empty()) detail["device"] = answer.device;
    m.detail_json = detail.dump();
  }

  std::string name_;
  Target target_;
  RunnerOptions options_;
  ExternalMeasurer measurer_;
};

}  // namespace

void apply_answer(const ExternalAnswer& answer, Measurement& m) {
  if (answer.status != Status::OK) {
    m.status = answer.status;
    m.error = answer.message;
    return;
  }
  if (answer.times_s.empty()) {
    m.status = Status::RUNTIME_ERROR;
    m.error = "the measurer answered OK with no times";
    return;
  }
  std::vector<double> samples_ns;
  for (size_t i = 0; i < answer.times_s.size(); ++i) {
    const double t = answer.times_s[i];
    if (!(std::isfinite(t) && t > 0)) {
      m.status = Status::RUNTIME_ERROR;
      std::ostringstream text;
      text << "the measurer answered times_s[" << i << "] = " << t << ", not a positive finite number of seconds";
      m.error = text.str();
      return;
    }
    samples_ns.push_back(t * 1e9);
  }
  m.stats = summarize(samples_ns);
  m.verified = answer.verified;
  m.max_abs_err = answer.max_abs_err;
}

std::unique_ptr<Runner> make_external_runner(const std::string& name, const Target& target,
                                             const RunnerOptions& options, ExternalMeasurer measurer) {
  if (options.warmup < 0 || options.min_repetitions < 1)
    usage_error("an external measurement needs warmup >= 0 and at least 1 repetition, got warmup " +
                std::to_string(options.warmup) + ", repetitions " + std::to_string(options.min_repetitions));
  if (!options.coefficients) internal_error("make_external_runner: no coefficients (make_runner sets them)");
  return std::make_unique<ExternalRunner>(name, target, options, std::move(measurer));
}

}  // namespace pto::measure
