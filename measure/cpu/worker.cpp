#include "measure/cpu/worker.h"

#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <exception>
#include <iostream>
#include <iterator>
#include <string_view>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/op_library.h"
#include "measure/isolation.h"

namespace pto::measure {

namespace {

using nlohmann::json;

constexpr std::pair<Fault, const char*> kFaultNames[] = {
    {Fault::Crash, "crash"}, {Fault::Hang, "hang"}, {Fault::CorruptOutput, "corrupt_output"}};

const char* fault_name(Fault f) {
  for (const auto& [fault, name] : kFaultNames)
    if (fault == f) return name;
  return "crash";
}

Fault parse_fault(const std::string& text) {
  for (const auto& [fault, name] : kFaultNames)
    if (text == name) return fault;
  usage_error("worker request: unknown fault '" + text + "'");
}

json options_to_json(const RunnerOptions& o) {
  return {{"min_time_ms", o.min_time_ms}, {"min_repetitions", o.min_repetitions},
          {"warmup", o.warmup},           {"flush_cache", o.flush_cache},
          {"threads", o.threads},         {"seed", o.seed}};
}

RunnerOptions options_from_json(const json& j) {
  RunnerOptions o;
  o.min_time_ms = j.at("min_time_ms").get<double>();
  o.min_repetitions = j.at("min_repetitions").get<int>();
  o.warmup = j.at("warmup").get<int>();
  o.flush_cache = j.at("flush_cache").get<bool>();
  o.threads = j.at("threads").get<int>();
  o.seed = j.at("seed").get<uint64_t>();
  return o;
}

// Ties this process's life to the parent's: the kernel kills it when the parent dies.
void follow_parent(pid_t parent) {
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != parent) std::_Exit(1);  // the parent died before the line above
}

}  // namespace

std::vector<Measurement> run_job(const WorkloadFixture& fixture, const CpuJob& job, const Target& host,
                                 const RunnerOptions& options) {
  if (job.interleaved) return measure_interleaved_candidates(fixture, job.configs, host, options);
  std::vector<Measurement> results;
  for (const TileConfig& config : job.configs)
    results.push_back(measure_candidate(fixture, config, host, options, job.fault));
  return results;
}

json WorkerRequest::to_json() const {
  json configs = json::array();
  for (const TileConfig& c : job.configs) configs.push_back(c.to_json());
  json j = {{"workload", workload.key()}, {"host", host.to_json()},      {"options", options_to_json(options)},
            {"configs", configs},         {"interleaved", job.interleaved}};
  if (job.fault) j["fault"] = fault_name(*job.fault);
  return j;
}

WorkerRequest WorkerRequest::from_json(const json& j) {
  WorkerRequest r{Workload::parse_key(j.at("workload").get<std::string>()), Target::from_json(j.at("host")),
                  options_from_json(j.at("options")), {}};
  for (const json& c : j.at("configs")) r.job.configs.push_back(TileConfig::from_json(c));
  r.job.interleaved = j.at("interleaved").get<bool>();
  if (j.contains("fault")) r.job.fault = parse_fault(j["fault"].get<std::string>());
  return r;
}

std::string measurements_to_text(const std::vector<Measurement>& list) {
  json j = json::array();
  for (const Measurement& m : list) j.push_back(m.to_json());
  return j.dump();
}

std::vector<Measurement> measurements_from_text(const std::string& text) {
  std::vector<Measurement> list;
  for (const json& item : json::parse(text)) list.push_back(Measurement::from_json(item));
  return list;
}

std::string serve_worker_request(const std::string& request_text) {
  WorkerRequest request = WorkerRequest::from_json(json::parse(request_text));
  WorkloadFixture fixture = make_fixture(request.workload, build_graph(request.workload), request.options.seed);
  return measurements_to_text(run_job(fixture, request.job, request.host, request.options));
}

int worker_main(int argc, char** argv) {
  try {
    for (int i = 1; i < argc; ++i) {
      if (std::string_view(argv[i]) == kWorkerParentFlag && i + 1 < argc) {
        follow_parent(static_cast<pid_t>(std::stol(argv[++i])));
      } else {
        usage_error(std::string("pto-tune-worker: unknown argument '") + argv[i] +
                    "' (it reads a request on stdin and is started by pto-tune)");
      }
    }
    std::string request{std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>()};
    std::cout << serve_worker_request(request) << std::flush;
    return std::cout ? 0 : kWorkThrewExitCode;
  } catch (const std::exception& e) {
    std::cerr << e.what() << "\n";
    return kWorkThrewExitCode;
  }
}

}  // namespace pto::measure
