// Estimate and CostModel: the analytical cost model's prediction for a (graph,
// TileConfig, target), scored from core's analyze() summary.
//
// Batched, Halide-style: a CostModel describes the graph once (it builds the Analyzer
// and the per-graph tables) and then scores many configs — estimate() with the whole
// breakdown for a person (`pto-tune explain`: to_table(), to_json()), score() with
// times only, for the search. Infeasible configs get no time, only the violated rules,
// exactly as core's verifier reports them. The formula, and which coefficient scales
// each term, is written out at the top of cost_model/estimate.cpp.
#pragma once

#include <cstdint>
#include <iterator>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "core/analyze.h"
#include "core/target.h"
#include "core/tensor_graph.h"
#include "core/tile_config.h"
#include "cost_model/coefficients.h"
#include "cost_model/time_terms.h"

namespace pto {

// What limits a kernel (or, for a whole Estimate, the limit that costs the most time).
enum class Bound { Cube, Vector, Hbm, L2, OnChip, LaunchLatency, Imbalance };
// "cube", "vector", "mte2_hbm", "l2", "onchip", "launch_latency", "imbalance"
const char* bound_name(Bound b);

// Where the time goes, in ns. Pipe fields are the busy time of the busiest core per
// pipe; pipes overlap one another, so the fields do not add up to the prediction.
// Overheads sit on the critical path; rooflines are the shared-bandwidth floors.
// kBreakdownFields below is the one list of these fields.
struct Breakdown {
  double mte2_hbm = 0;       // MTE2 loads served by HBM
  double mte2_l2 = 0;        // MTE2 loads that hit in L2
  double read_latency = 0;   // MTE2 waiting on GM read latency (Cube: per load; vector: per task)
  double mte1 = 0;           // L1 -> L0A/L0B
  double cube = 0;           // M pipe
  double vector = 0;         // V pipe
  double fix = 0;            // L0C -> GM, split-K atomics included
  double mte3 = 0;           // UB -> GM
  double write_latency = 0;  // FIX/MTE3 waiting on GM write latency (Cube: per store; vector: per task)
  double launch = 0;
  double task = 0;           // per-task dispatch
  double instr = 0;          // per-instruction issue, flags included
  double hbm_roofline = 0;
  double l2_roofline = 0;
  Breakdown& operator+=(const Breakdown& o);
  nlohmann::json to_json() const;
};

// What a Breakdown field is: a pipe's busy time (a row of the table's pipe list), an
// overhead of the busiest core (task, instr), or a figure of the kernel as a whole
// (launch, the rooflines). A kernel's pipe and core fields are the larger of its two
// core types'.
enum class BreakdownKind { Pipe, CoreOverhead, KernelWide };

struct BreakdownField {
  const char* name;   // JSON key, without its "_ns"
  const char* label;  // table row
  double Breakdown::*member;
  BreakdownKind kind;
};

// The one list of Breakdown's fields: operator+=, to_json, to_table, the unit
// conversion and the merge of a kernel's core types all walk it, so a new part needs
// its member above and one line here.
inline constexpr BreakdownField kBreakdownFields[] = {
    {"mte2_hbm", "MTE2 from HBM", &Breakdown::mte2_hbm, BreakdownKind::Pipe},
    {"mte2_l2", "MTE2 from L2", &Breakdown::mte2_l2, BreakdownKind::Pipe},
    {"read_latency", "MTE2 GM latency", &Breakdown::read_latency, BreakdownKind::Pipe},
    {"mte1", "MTE1 L1->L0", &Breakdown::mte1, BreakdownKind::Pipe},
    {"cube", "Cube (M)", &Breakdown::cube, BreakdownKind::Pipe},
    {"vector", "Vector (V)", &Breakdown::vector, BreakdownKind::Pipe},
    {"fix", "FIX L0C->GM", &Breakdown::fix, BreakdownKind::Pipe},
    {"mte3", "MTE3 UB->GM", &Breakdown::mte3, BreakdownKind::Pipe},
    {"write_latency", "store latency", &Breakdown::write_latency, BreakdownKind::Pipe},
    {"launch", "launch", &Breakdown::launch, BreakdownKind::KernelWide},
    {"task", "task dispatch", &Breakdown::task, BreakdownKind::CoreOverhead},
    {"instr", "instruction issue", &Breakdown::instr, BreakdownKind::CoreOverhead},
    {"hbm_roofline", "HBM floor", &Breakdown::hbm_roofline, BreakdownKind::KernelWide},
    {"l2_roofline", "L2 floor", &Breakdown::l2_roofline, BreakdownKind::KernelWide},
};
inline constexpr int kNumBreakdownFields = static_cast<int>(std::size(kBreakdownFields));

// The index of a field in kBreakdownFields.
constexpr int breakdown_index(double Breakdown::*member) {
  for (int i = 0; i < kNumBreakdownFields; ++i) {
    if (kBreakdownFields[i].member == member) return i;
  }
  return -1;
}

struct KernelEstimate {
  int kernel = -1;
  bool uses_cube = false;
  bool mix = false;            // one task a Cube unit and its vector units (flash_attention)
  int64_t aic_tasks = 0, aiv_tasks = 0;  // a MIX kernel's tasks count on both
  int64_t waves = 0;           // of the kernel's main core type (AIC for cube kernels)
  int64_t wave_width = 0;      // cores of that type: the tasks one wave runs
  int64_t last_wave_tasks = 0;  // how full the last wave is, of wave_width
  double idle_fraction = 0;    // core-time of those waves left idle (tail wave, few tiles)
  int64_t split_k = 1;
  int l0_slots = 0;            // Cube kernels: L0A/L0B slots (1: MTE1 and the Cube take turns)
  double l2_hit_ratio = 0;     // of the GM loads other than a fused workspace, busiest core
  double mte2_bytes = 0;       // GM -> L1/UB
  double hbm_bytes = 0;        // reads that miss L2, writes the L2 cannot absorb
  double time_ns = 0;          // its launch included
  Bound bound = Bound::LaunchLatency;
  Breakdown breakdown;
};

struct Estimate {
  bool feasible = true;
  std::vector<Violation> violations;   // empty when feasible
  double predicted_ns = 0;             // +infinity when infeasible
  Bound bound = Bound::LaunchLatency;
  Breakdown breakdown;                 // summed over kernels
  double mte2_bytes = 0;
  double hbm_bytes = 0;
  double useful_flops = 0;             // 2*M*N*K summed over matmuls
  // Matmul only: useful flops per MTE2 byte, and the target's peak Cube flops per HBM
  // byte. Compute bound (PyPTO matmul guide) when intensity >= balance.
  std::optional<double> arithmetic_intensity;
  std::optional<double> machine_balance;
  std::vector<KernelEstimate> kernels;

  // Fields: feasible, violations [{rule, detail}], predicted_ns (null if infeasible),
  // bound, breakdown, mte2_bytes, hbm_bytes, useful_flops, arithmetic_intensity,
  // machine_balance, kernels.
  nlohmann::json to_json() const;
  std::string to_table() const;        // for a person: summary line, kernels, pipes
};

class CostModel {
 public:
  // Usage Error naming the target field when a rate the model divides by is not positive,
  // or when the target has no Cube fractal for a matmul's input dtype.
  CostModel(const TensorGraph& graph, const Target& target);
  CostModel(const TensorGraph& graph, const Target& target, Coefficients coefficients);
  ~CostModel();
  CostModel(CostModel&&) noexcept;
  CostModel& operator=(CostModel&&) noexcept;

  // This model (target, coefficients, the target's vector tables) for another graph,
  // built without looking the target up again: what pricing many shapes of one op on
  // one target reuses (cost_model/target_predictors.h). Predicts exactly what
  // CostModel(graph, target(), coefficients()) does, and throws where it would.
  CostModel for_graph(const TensorGraph& graph) const;

  Estimate estimate(const TileConfig& config) const;
  double predict_ns(const TileConfig& config) const;  // +infinity when infeasible
  // The same for a config already analyzed (`summary` is its analysis): the time alone,
  // what a search ranks by, without the linear form terms() keeps.
  double predict_ns(const TilingSummary& summary, const TileConfig& config) const;
  // predicted_ns[i] = predict_ns(configs[i]); the spans must be the same length.
  void score(std::span<const TileConfig> configs, std::span<double> predicted_ns) const;

  // The pieces, for tests and calibration: the summary the model scores, the estimate
  // of a given summary, and a feasible summary's prediction as a linear form in any
  // coefficients (ns). `config` supplies what the summary does not carry: l2_group and
  // the Cube tile as given.
  TilingSummary analyze(const TileConfig& config) const;
  Estimate estimate(const TilingSummary& summary, const TileConfig& config) const;
  TimeTerms terms(const TilingSummary& summary, const TileConfig& config,
                  const Coefficients& coefficients) const;

  const Coefficients& coefficients() const;
  void set_coefficients(Coefficients coefficients);
  const Target& target() const;
  const TensorGraph& graph() const;

 private:
  CostModel();
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace pto
