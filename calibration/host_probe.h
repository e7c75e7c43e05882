// The host probe: measures what the CPU runtime's steps cost on this machine — the
// prices the host cost model charges (cost_model/host_prices.h) — by timing small
// families of one-thread runs and fitting each by non-negative least squares.
//
// Why: the model's prices were measured on one machine of each ISA, and another machine
// differs by a different factor per price (an exp row 10x, a TMATMUL step 4.5x, packing
// 2x between the two measured). Coefficients scale whole terms, so calibration on
// workloads alone cannot set those ratios; the probe does, in seconds, before
// `pto-tune calibrate` fits the coefficients on top. bench/runtime_steps_bench runs the
// same families (and more) under Google Benchmark, for the published figures.
//
// A family holds the amounts the model charges for each run fixed but one or two, so
// the fit separates them. Each price comes from the family that isolates it; the
// speed-ups compare a fit with the reference machine's (HostPrices says which):
//   kernel  the micro-kernel alone on packed panels in L1d, 9 shapes: its time against
//           the model's at the reference rates (kernel_speedup), and a register block;
//   cube    32 tasks of [64 x 64] x [64 x 48], split into 4 to 48 TMATMULs a task:
//           a TMATMUL step;
//   vector  add and softmax [512 x 64] in tiles of 1 to 64 whole rows: a task's
//           instruction;
//   element 8 fused ops on [128 | 256 x 1024]: a pass's element, an exp / log / tanh
//           row's and an erf / erfc row's beyond it, a loaded byte (copy_speedup) and a
//           stored one;
//   row     add, gelu and softmax in tiles of 4096 elements, 16 to 1024 wide: a row
//           loop's call and a run start;
//   pack    TLOAD's packing of a 256 KiB and a 1 MiB operand into A and B panels,
//           runs of 32 to 512 floats: a byte (pack_speedup) and a run;
//   stream  rmsnorm [2048 x 1024] in whole-row tiles of 16 to 2048 rows, a UB footprint
//           from 200 KiB to 24 MiB: how fast a pass streams from L2, the LLC and DRAM
//           (no linear fit: the model, priced at the rest, is matched to its shape).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "core/target.h"
#include "cost_model/host_prices.h"

namespace pto::calibration {

// One timed run of a family, and the amounts the fit prices.
struct ProbeCase {
  std::string name;
  std::map<std::string, double> amounts;
  // Sets the run up (compiles, allocates, fills inputs) and returns one timed iteration.
  std::function<std::function<void()>()> prepare;
};

struct ProbeFamily {
  std::string title;
  std::vector<std::string> regressors;
  std::vector<ProbeCase> cases;
};

// The families (see above), built for `target` (the host target: kept by reference).
ProbeFamily kernel_family(const Target& target);
ProbeFamily cube_family(const Target& target);
ProbeFamily vector_family(const Target& target);
ProbeFamily element_family(const Target& target);
ProbeFamily row_family(const Target& target);
// TLOAD's packing of an fp32 operand of `kib` KiB into A (`is_a`) or B panels.
ProbeFamily pack_family(bool is_a, int64_t kib);
// Amounts per case: "rows" of the tile, "ub_kib" its UB footprint, "elements".
ProbeFamily stream_family(const Target& target);

// Non-negative least squares of time = Σ price x amount over the family's cases that
// `ns` times (ns per iteration, by case name). Prices in ns, by regressor; empty when
// fewer cases were timed than the family has regressors.
std::map<std::string, double> fit_family(const ProbeFamily& family, const std::map<std::string, double>& ns);

struct HostProbeOptions {
  int rounds = 3;             // every case timed once a round; a case keeps its fastest round
  double min_time_ms = 20;    // a round times a case until its runs add up to this ...
  int min_repetitions = 3;    // ... and it ran at least this often (the round's median)
  // Called as each case is timed: (timed so far, planned in all).
  std::function<void(size_t done, size_t planned)> progress;
};

struct ProbeFit {
  std::string family;
  std::map<std::string, double> cycles;  // each regressor's price, in cycles of the nominal clock
};

struct HostProbeResult {
  HostPrices prices;
  std::vector<ProbeFit> fits;
  std::vector<std::string> kept;  // prices left at the default, each with why
  // How far a case's slowest round ran past its fastest, the median over the cases: how
  // busy the machine was (0.03 on the idle Zen 5 VM; a probe is worth repeating when the
  // rounds disagree by more than a few tenths). 0 with one round.
  double round_spread = 0;
};

// The families probe_host() times (see above), the stream family last.
std::vector<ProbeFamily> probe_families(const Target& target);

// The prices the families' times `ns` (ns per iteration, by case name) give, starting
// from default_host_prices(target): each family is fitted and each price derived from
// the family that isolates it; a price whose family was not timed, or whose fit is
// unusable (not positive where the model divides by it), keeps its default and is
// named in `kept` with why.
HostProbeResult derive_host_prices(const Target& target, const std::vector<ProbeFamily>& families,
                                   const std::map<std::string, double>& ns);

// Times every family on this machine (one thread) and derives the prices from them.
// Usage Error, before any timing, for a target that is not a host or options out of
// range.
HostProbeResult probe_host(const Target& target, const HostProbeOptions& options = {});

}  // namespace pto::calibration
