// The measure protocol (docs/measure_protocol.md): the JSON a measure command reads
// (a request: the workload, the target, and per candidate its id, config and PyPTO
// module) and the JSON it answers (per candidate id: the seconds of each repeat, or a
// status of failed / wrong_result / timeout with a message). Versioned, so that a
// command written for this version is told, not misread, by a later pto-tune.
//
// One reader and writer for both ends pto-tune meets: the command backend
// (measure/command_runner.cpp) writes requests and reads answers, and
// `pto-tune db import-measurements --format json` reads an answer file beside its
// request.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "core/target.h"
#include "measure/external_measure.h"

namespace pto::measure {

inline constexpr const char* kProtocolName = "pto-tune-measure";
inline constexpr int kProtocolVersion = 1;

// The request for `batch` on `target`; `timeout_s` is the per-candidate limit the
// command is given (it may report a candidate that overruns it as "timeout").
nlohmann::json protocol_request(const ExternalBatch& batch, const Target& target, double timeout_s);

// The batch a request describes (workload, candidates with ids and configs, repeats)
// and its target's name and fingerprint. Usage Error naming the field for a request
// that is not one.
struct ProtocolRequest {
  ExternalBatch batch;
  std::string target_name;
  std::string target_fingerprint;
};
ProtocolRequest parse_protocol_request(const nlohmann::json& request);

// The answers to the candidates `ids`, in that order. An answer that is no protocol
// answer at all (not an object, another protocol or a newer version, no `results`
// list) is a Usage Error naming what is wrong. A candidate the answer leaves out,
// answers twice or answers with something unreadable: Tolerant (a tuner measuring)
// gives it a RUNTIME_ERROR answer that says so, and the others stand; Strict (an
// import) makes it a Usage Error naming the result.
enum class AnswerReading { Tolerant, Strict };
std::vector<ExternalAnswer> parse_protocol_answer(const nlohmann::json& answer, const std::vector<std::string>& ids,
                                                  AnswerReading reading = AnswerReading::Tolerant);

}  // namespace pto::measure
