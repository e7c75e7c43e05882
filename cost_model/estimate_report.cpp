// How an Estimate reads: JSON for machines (`pto-tune explain --json`) and a table for
// a person (`pto-tune explain`).
#include <cstdio>
#include <string>

#include <nlohmann/json.hpp>

#include "cost_model/estimate.h"
#include "cost_model/format_ns.h"

namespace pto {

using nlohmann::json;

namespace {

std::string format(const char* fmt, double a) {
  char buf[64];
  std::snprintf(buf, sizeof buf, fmt, a);
  return buf;
}

json optional_number(const std::optional<double>& v) { return v ? json(*v) : json(nullptr); }

json kernel_json(const KernelEstimate& k) {
  return {{"kernel", k.kernel},
          {"uses_cube", k.uses_cube},
          {"mix", k.mix},
          {"aic_tasks", k.aic_tasks},
          {"aiv_tasks", k.aiv_tasks},
          {"waves", k.waves},
          {"wave_width", k.wave_width},
          {"last_wave_tasks", k.last_wave_tasks},
          {"idle_fraction", k.idle_fraction},
          {"split_k", k.split_k},
          {"l0_slots", k.l0_slots},
          {"l2_hit_ratio", k.l2_hit_ratio},
          {"mte2_bytes", k.mte2_bytes},
          {"hbm_bytes", k.hbm_bytes},
          {"time_ns", k.time_ns},
          {"bound", bound_name(k.bound)},
          {"breakdown", k.breakdown.to_json()}};
}

}  // namespace

const char* bound_name(Bound b) {
  switch (b) {
    case Bound::Cube: return "cube";
    case Bound::Vector: return "vector";
    case Bound::Hbm: return "mte2_hbm";
    case Bound::L2: return "l2";
    case Bound::OnChip: return "onchip";
    case Bound::LaunchLatency: return "launch_latency";
    case Bound::Imbalance: return "imbalance";
  }
  return "launch_latency";
}

Breakdown& Breakdown::operator+=(const Breakdown& o) {
  for (const BreakdownField& f : kBreakdownFields) this->*f.member += o.*f.member;
  return *this;
}

json Breakdown::to_json() const {
  json j = json::object();
  for (const BreakdownField& f : kBreakdownFields) j[std::string(f.name) + "_ns"] = this->*f.member;
  return j;
}

json Estimate::to_json() const {
  json violations_json = json::array();
  for (const Violation& v : violations) violations_json.push_back({{"rule", v.rule}, {"detail", v.detail}});
  json kernels_json = json::array();
  for (const KernelEstimate& k : kernels) kernels_json.push_back(kernel_json(k));
  return {{"feasible", feasible},
          {"violations", violations_json},
          {"predicted_ns", feasible ? json(predicted_ns) : json(nullptr)},
          {"bound", feasible ? json(bound_name(bound)) : json(nullptr)},
          {"breakdown", breakdown.to_json()},
          {"mte2_bytes", mte2_bytes},
          {"hbm_bytes", hbm_bytes},
          {"useful_flops", useful_flops},
          {"arithmetic_intensity", optional_number(arithmetic_intensity)},
          {"machine_balance", optional_number(machine_balance)},
          {"kernels", kernels_json}};
}

std::string Estimate::to_table() const {
  if (!feasible) return "infeasible:\n" + format_violations(violations) + "\n";
  std::string out = "predicted " + format_ns(predicted_ns) + "  (bound: " + bound_name(bound) + ")\n";
  if (arithmetic_intensity && machine_balance) {
    out += "arithmetic intensity " + format("%.1f", *arithmetic_intensity) +
           " flop/B of MTE2 traffic; machine balance " + format("%.1f", *machine_balance) +
           " flop/B (compute bound at or above it)\n";
  }
  char line[160];
  std::snprintf(line, sizeof line, "\n%-6s %-6s %9s %9s %6s %9s %6s %7s %7s %11s  %s\n", "kernel",
                "unit", "aic_tasks", "aiv_tasks", "waves", "last_wave", "idle", "split_k", "l2_hit", "time",
                "bound");
  out += line;
  for (const KernelEstimate& k : kernels) {
    const std::string last_wave = std::to_string(k.last_wave_tasks) + "/" + std::to_string(k.wave_width);
    std::snprintf(line, sizeof line, "%-6d %-6s %9lld %9lld %6lld %9s %5.0f%% %7lld %6.1f%% %11s  %s\n",
                  k.kernel, k.mix ? "mix" : k.uses_cube ? "cube" : "vector", static_cast<long long>(k.aic_tasks),
                  static_cast<long long>(k.aiv_tasks), static_cast<long long>(k.waves), last_wave.c_str(),
                  100 * k.idle_fraction, static_cast<long long>(k.split_k), 100 * k.l2_hit_ratio,
                  format_ns(k.time_ns).c_str(), bound_name(k.bound));
    out += line;
  }
  for (const KernelEstimate& k : kernels) {
    if (k.l0_slots == 1) {
      out += "kernel " + std::to_string(k.kernel) +
             ": one L0A/L0B slot (kL0 x nL0 or mL0 x kL0 too large for two), so MTE1 and the Cube take turns\n";
    }
  }
  const Breakdown& b = breakdown;
  out += "\nbusy time per pipe (busiest core, summed over kernels; pipes overlap)\n";
  for (const BreakdownField& f : kBreakdownFields) {
    const double ns = b.*f.member;
    if (f.kind != BreakdownKind::Pipe || ns <= 0) continue;
    char row[64];
    std::snprintf(row, sizeof row, "  %-16s %s\n", f.label, format_ns(ns).c_str());
    out += row;
  }
  out += "critical-path overheads: launch " + format_ns(b.launch) + ", task dispatch " +
         format_ns(b.task) + ", instruction issue " + format_ns(b.instr) + "\n";
  out += "shared-bandwidth floors: HBM " + format_ns(b.hbm_roofline) + " (" +
         format("%.1f", hbm_bytes / 1e6) + " MB), L2 " + format_ns(b.l2_roofline) + "\n";
  return out;
}

}  // namespace pto
