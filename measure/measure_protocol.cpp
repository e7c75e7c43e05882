#include "measure/measure_protocol.h"

#include <map>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/json_read.h"
#include "core/pypto_module.h"

namespace pto::measure {

namespace {

using nlohmann::json;
namespace jr = json_read;

json workload_json(const Workload& w) {
  json attrs = json::object();
  for (const auto& [name, value] : w.attrs) attrs[name] = value;
  json j{{"key", w.key()}, {"op", w.op}, {"shape", w.shape}, {"dtype", dtype_name(w.dtype)}, {"attrs", attrs}};
  if (!w.expr.empty()) j["expr"] = w.expr;
  return j;
}

const json& member(const json& obj, const std::string& path, const char* key) {
  if (!obj.contains(key)) usage_error(path + ": missing required field '" + key + "'");
  return obj[key];
}

// The protocol's name and a version this pto-tune reads, else a Usage Error saying
// what `what` (the request, the answer) is instead.
void check_protocol(const json& j, const std::string& what) {
  jr::object(j, what);
  if (!j.contains("protocol") || j["protocol"] != kProtocolName)
    usage_error(what + " is not a " + kProtocolName + " message (its \"protocol\" is " +
                (j.contains("protocol") ? jr::show(j["protocol"]) : "missing") + ")");
  const int64_t version = jr::integer(member(j, what, "version"), what + ".version", 1, INT32_MAX, "a protocol version");
  if (version > kProtocolVersion)
    usage_error(what + " speaks protocol version " + std::to_string(version) + ", newer than this pto-tune's " +
                std::to_string(kProtocolVersion));
}

Status answered_status(const std::string& status) {
  if (status == "failed") return Status::RUNTIME_ERROR;
  if (status == "wrong_result") return Status::WRONG_RESULT;
  if (status == "timeout") return Status::TIMEOUT;
  usage_error("unknown status '" + status + "' (known: ok, failed, wrong_result, timeout)");
}

// One entry of the answer's `results`; Usage Error naming the field when unreadable.
ExternalAnswer answer_of(const json& entry, const std::string& path) {
  ExternalAnswer a;
  const std::string status = entry.contains("status") ? jr::string(entry["status"], path + ".status") : "ok";
  if (status != "ok") {
    a.status = answered_status(status);
    a.message = entry.contains("message") ? jr::string(entry["message"], path + ".message") : "";
    if (a.message.empty()) a.message = "the measure command reported " + status + " without a message";
    return a;
  }
  const json& times = jr::array(member(entry, path, "times_s"), path + ".times_s", 1, SIZE_MAX);
  for (size_t i = 0; i < times.size(); ++i) {
    // Signs and zero pass here: the runner refuses them with the value in its message.
    if (!times[i].is_number()) usage_error(jr::index_path(path + ".times_s", i) + ": expected seconds, got " + jr::show(times[i]));
    a.times_s.push_back(times[i].get<double>());
  }
  if (entry.contains("verified")) a.verified = jr::boolean(entry["verified"], path + ".verified");
  if (entry.contains("max_abs_err"))
    a.max_abs_err = jr::positive_number(entry["max_abs_err"], path + ".max_abs_err", /*allow_zero=*/true);
  return a;
}

ExternalAnswer failure(const std::string& message) { return failed_answer(Status::RUNTIME_ERROR, message); }

}  // namespace

json protocol_request(const ExternalBatch& batch, const Target& target, double timeout_s) {
  json candidates = json::array();
  for (const ExternalCandidate& c : batch.candidates) {
    const ModuleNote note{"pto-tune measure request, candidate " + c.id, ""};
    candidates.push_back({{"id", c.id},
                          {"config", c.config.to_json()},
                          {"pypto", pypto_module(batch.workload, target, c.config, note)}});
  }
  return json{{"protocol", kProtocolName},
              {"version", kProtocolVersion},
              {"workload", workload_json(batch.workload)},
              {"target", {{"name", target.name}, {"fingerprint", target.fingerprint()}}},
              {"warmup", batch.warmup},
              {"repeats", batch.repeats},
              {"interleaved", batch.interleaved},
              {"timeout_s", timeout_s},
              {"candidates", candidates}};
}

ProtocolRequest parse_protocol_request(const json& request) {
  check_protocol(request, "the request");
  ProtocolRequest r;
  const json& workload = jr::object(member(request, "request", "workload"), "request.workload");
  r.batch.workload = Workload::parse_key(jr::string(member(workload, "request.workload", "key"), "request.workload.key"));
  const json& target = jr::object(member(request, "request", "target"), "request.target");
  r.target_name = jr::string(member(target, "request.target", "name"), "request.target.name");
  r.target_fingerprint = jr::string(member(target, "request.target", "fingerprint"), "request.target.fingerprint");
  if (request.contains("repeats"))
    r.batch.repeats = static_cast<int>(jr::integer(request["repeats"], "request.repeats", 1, INT32_MAX, "a count >= 1"));
  const json& candidates = jr::array(member(request, "request", "candidates"), "request.candidates", 0, SIZE_MAX);
  for (size_t i = 0; i < candidates.size(); ++i) {
    const std::string path = jr::index_path("request.candidates", i);
    jr::object(candidates[i], path);
    ExternalCandidate c;
    c.id = jr::string(member(candidates[i], path, "id"), path + ".id");
    c.config = TileConfig::from_json(member(candidates[i], path, "config"));
    r.batch.candidates.push_back(std::move(c));
  }
  return r;
}

std::vector<ExternalAnswer> parse_protocol_answer(const json& answer, const std::vector<std::string>& ids,
                                                  AnswerReading reading) {
  check_protocol(answer, "the answer");
  const json& results = jr::array(member(answer, "answer", "results"), "answer.results", 0, SIZE_MAX);
  const std::string device = answer.contains("device") ? jr::string(answer["device"], "answer.device") : "";
  std::map<std::string, ExternalAnswer> by_id;
  std::map<std::string, int> times_answered;
  for (size_t i = 0; i < results.size(); ++i) {
    const std::string path = jr::index_path("answer.results", i);
    std::string id;
    try {
      jr::object(results[i], path);
      id = jr::string(member(results[i], path, "id"), path + ".id");
      by_id[id] = answer_of(results[i], path + " (candidate " + id + ")");
    } catch (const Error& e) {
      if (reading == AnswerReading::Strict) throw;
      if (id.empty()) continue;  // no id to blame: it answers nobody
      by_id[id] = failure(std::string("unreadable answer: ") + e.what());
    }
    ++times_answered[id];
  }
  std::vector<ExternalAnswer> out;
  for (const std::string& id : ids) {
    auto it = by_id.find(id);
    if (reading == AnswerReading::Strict && (it == by_id.end() || times_answered[id] > 1))
      usage_error("the answer has " + std::to_string(times_answered[id]) + " results for candidate " + id +
                  ", expected one");
    if (it == by_id.end()) out.push_back(failure("the measure command's answer has no result for candidate " + id));
    else if (times_answered[id] > 1) out.push_back(failure("the measure command answered candidate " + id + " " +
                                                           std::to_string(times_answered[id]) + " times"));
    else out.push_back(it->second);
    out.back().device = device;
  }
  return out;
}

}  // namespace pto::measure
