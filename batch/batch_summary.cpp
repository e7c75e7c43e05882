#include "batch/batch_summary.h"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>

namespace pto::batch {

using nlohmann::json;

int64_t BatchSummary::count(const std::string& status) const {
  const auto it = workloads.find(status);
  return it == workloads.end() ? 0 : it->second;
}

double BatchSummary::geomean_speedup() const {
  return speedups ? std::exp(log_speedup_sum / static_cast<double>(speedups)) : 1;
}

json BatchSummary::to_json() const {
  return json{{"workloads", workloads},        {"failed_measurements", failed_measurements},
              {"measurements", measurements},  {"log_speedup_sum", log_speedup_sum},
              {"speedups", speedups},          {"geomean_speedup", geomean_speedup()},
              {"elapsed_s", elapsed_s},        {"busy_s", busy_s},
              {"results", results}};
}

void BatchSummary::add(const json& worker) {
  for (const auto& [k, v] : worker["workloads"].items()) workloads[k] += v.get<int64_t>();
  for (const auto& [k, v] : worker["failed_measurements"].items()) failed_measurements[k] += v.get<int64_t>();
  measurements += worker["measurements"].get<int64_t>();
  log_speedup_sum += worker["log_speedup_sum"].get<double>();
  speedups += worker["speedups"].get<int64_t>();
  busy_s += worker["busy_s"].get<double>();
  worker_busy_s.push_back(worker["busy_s"].get<double>());
  for (const json& r : worker["results"]) results.push_back(r);
}

namespace {

double cpu_seconds(int who) {
  rusage u{};
  ::getrusage(who, &u);
  const auto seconds = [](const timeval& t) { return static_cast<double>(t.tv_sec) + 1e-6 * static_cast<double>(t.tv_usec); };
  return seconds(u.ru_utime) + seconds(u.ru_stime);
}

}  // namespace

json utilisation(const BatchSummary& s, int jobs) {
  json critical = nullptr;
  for (const json& r : s.results)
    if (r.contains("seconds") && (critical.is_null() || r["seconds"].get<double>() > critical["seconds"].get<double>()))
      critical = {{"workload", r["workload"]}, {"where", r["where"]}, {"seconds", r["seconds"]}};
  const double wall = s.elapsed_s;
  return json{{"workers", {{"count", jobs},
                           {"busy_s", s.worker_busy_s},
                           {"busy_fraction", wall > 0 ? s.busy_s / (jobs * wall) : 0.0},
                           {"cpu_s", cpu_seconds(RUSAGE_SELF) + cpu_seconds(RUSAGE_CHILDREN)},
                           {"cores", std::max(1L, ::sysconf(_SC_NPROCESSORS_ONLN))}}},
              {"critical_path", critical}};
}

}  // namespace pto::batch
