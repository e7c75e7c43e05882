#include "measure/sim/simulator.h"

#include <cstdio>
#include <string>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/program_verify.h"
#include "measure/sim/engine.h"

namespace pto::sim {
namespace {

void check_inputs(const Program& program, const Target& target, const SimOptions& options) {
  if (target.kind != TargetKind::Npu)
    usage_error("the simulator models NPU targets; target '" + target.name + "' is of kind '" +
                target_kind_name(target.kind) + "'");
  if (!program.target.empty() && program.target != target.name)
    usage_error("program was compiled for target '" + program.target + "', not '" + target.name + "'");
  if (target.clock_mhz <= 0) usage_error("target '" + target.name + "' has clock_mhz " + std::to_string(target.clock_mhz));
  if (options.l2_line_bytes <= 0) usage_error("SimOptions.l2_line_bytes must be positive, got " + std::to_string(options.l2_line_bytes));
  verify_program(program);
}

// The resource closest to saturation: a pipe of one core type (busy cycles over the
// cores that ran tasks), or a shared bandwidth; "none" for a program with no work.
void find_bound(const EngineTotals& e, SimResult& r) {
  r.bound = "none";
  auto consider = [&](const std::string& name, double utilisation) {
    if (utilisation > r.bound_utilisation) r.bound = name, r.bound_utilisation = utilisation;
  };
  const double span = e.makespan > 0 ? e.makespan : 1;
  for (int pool = 0; pool < kPools; ++pool) {
    if (e.cores_used[pool] == 0) continue;
    for (int p = 0; p < kNumPipes; ++p)
      consider(std::string(pipe_name(static_cast<Pipe>(p))) + "@" + core_type_name(pool_core_type(pool)),
               e.busy_cycles[pool][p] / (static_cast<double>(e.cores_used[pool]) * span));
  }
  consider("HBM", r.hbm_utilisation);
  consider("L2", r.l2_utilisation);
}

SimResult to_result(const EngineTotals& e, const Target& target) {
  SimResult r;
  r.cycles = e.makespan;
  r.time_ns = e.makespan * 1e3 / target.clock_mhz;
  const double span = e.makespan > 0 ? e.makespan : 1;
  for (int pool = 0; pool < kPools; ++pool) {
    if (e.cores_used[pool] == 0) continue;
    const CoreType type = pool_core_type(pool);
    r.cores_used[type] = e.cores_used[pool];
    auto& u = r.pipe_utilisation[type];
    for (int p = 0; p < kNumPipes; ++p) u[p] = e.busy_cycles[pool][p] / (static_cast<double>(e.pool_cores[pool]) * span);
  }
  r.kernels = e.kernels;
  const MemoryTotals& m = e.memory;
  r.gm_read_bytes = m.gm_read_bytes;
  r.gm_write_bytes = m.gm_write_bytes;
  r.l2_hit_rate = m.gm_read_bytes > 0 ? m.l2_hit_bytes / m.gm_read_bytes : 0;
  r.hbm_read_bytes = m.hbm_read_bytes;
  r.hbm_write_bytes = m.hbm_write_bytes;
  r.hbm_utilisation = m.hbm_busy_cycles / span;
  r.l2_utilisation = m.l2_busy_cycles / span;
  r.instructions = e.instructions;
  r.tasks = e.tasks;
  find_bound(e, r);
  return r;
}

std::string percent(double x) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "%.1f%%", 100 * x);
  return buf;
}

std::string megabytes(double bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f MB", bytes / 1e6);
  return buf;
}

}  // namespace

SimResult simulate(const Program& program, const Target& target, const SimOptions& options) {
  check_inputs(program, target, options);
  return to_result(run_engine(program, target, options), target);
}

std::string SimResult::summary() const {
  char head[160];
  std::snprintf(head, sizeof head, "%s: %.0f cycles = %.3f us, bound by %s (%s busy)\n", kLabel, cycles,
                time_ns / 1e3, bound.c_str(), percent(bound_utilisation).c_str());
  std::string out = head;
  for (const auto& [core, pipes] : pipe_utilisation) {
    out += std::string("  ") + core_type_name(core) + " (" + std::to_string(cores_used.at(core)) + " cores used) pipes:";
    for (int p = 0; p < kNumPipes; ++p) out += std::string(" ") + pipe_name(static_cast<Pipe>(p)) + " " + percent(pipes[p]);
    out += "\n";
  }
  out += "  L2 hit rate " + percent(l2_hit_rate) + ", GM read " + megabytes(gm_read_bytes) + ", write " +
         megabytes(gm_write_bytes) + "; HBM read " + megabytes(hbm_read_bytes) + ", write " +
         megabytes(hbm_write_bytes) + "; HBM busy " + percent(hbm_utilisation) + ", L2 busy " +
         percent(l2_utilisation) + "\n";
  out += "  " + std::to_string(instructions) + " instructions, " + std::to_string(tasks) + " tasks\n";
  for (const KernelTiming& k : kernels) {
    char line[200];
    std::snprintf(line, sizeof line, "  kernel %d %s: %.0f .. %.0f cycles (%lld tasks)\n", k.kernel, k.name.c_str(),
                  k.start_cycle, k.end_cycle, static_cast<long long>(k.tasks));
    out += line;
  }
  return out;
}

nlohmann::json SimResult::to_json() const {
  nlohmann::json pipes = nlohmann::json::object(), used = nlohmann::json::object();
  for (const auto& [core, u] : pipe_utilisation) {
    nlohmann::json& j = pipes[core_type_name(core)];
    for (int p = 0; p < kNumPipes; ++p) j[pipe_name(static_cast<Pipe>(p))] = u[p];
    used[core_type_name(core)] = cores_used.at(core);
  }
  nlohmann::json kernel_list = nlohmann::json::array();
  for (const KernelTiming& k : kernels)
    kernel_list.push_back({{"kernel", k.kernel}, {"name", k.name}, {"start_cycle", k.start_cycle},
                           {"end_cycle", k.end_cycle}, {"tasks", k.tasks}});
  return {{"label", kLabel},
          {"cycles", cycles},
          {"time_ns", time_ns},
          {"bound", bound},
          {"bound_utilisation", bound_utilisation},
          {"pipe_utilisation", pipes},
          {"cores_used", used},
          {"kernels", kernel_list},
          {"gm_read_bytes", gm_read_bytes},
          {"gm_write_bytes", gm_write_bytes},
          {"l2_hit_rate", l2_hit_rate},
          {"hbm_read_bytes", hbm_read_bytes},
          {"hbm_write_bytes", hbm_write_bytes},
          {"hbm_utilisation", hbm_utilisation},
          {"l2_utilisation", l2_utilisation},
          {"instructions", instructions},
          {"tasks", tasks}};
}

}  // namespace pto::sim
