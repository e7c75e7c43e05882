// Coefficients: the knobs of the analytical cost model that calibration fits, and
// their JSON file.
//
// The model predicts a time built from sums and maxima of terms, each scaled by exactly
// one coefficient (cost_model/estimate.cpp states the formula), so that a fit by
// non-negative least squares is well posed. Two kinds:
//   scales    hbm, l2, cube, vector, onchip, latency, spill: dimensionless multipliers of a
//             nominal time derived from the Target (1 = the datasheet figure; an effective
//             bandwidth is nominal / scale, an efficiency is 1 / scale);
//   overheads task, instr, launch: cycles per task, per instruction, per kernel launch.
// On a host (CPU) target a calibration also measures the machine's own prices of the
// runtime's steps (cost_model/host_prices.h), which travel with its coefficients.
// Calibrated coefficients are saved per (target, backend) as a JSON file
// (cost_model/calibration_store.h says where); the target's fingerprint travels with
// them so that a changed hardware description never picks up a fit made for another.
#pragma once

#include <array>
#include <optional>
#include <string>

#include <nlohmann/json_fwd.hpp>

#include "cost_model/host_prices.h"

namespace pto {

struct Target;

enum class Coef {
  Hbm,      // HBM traffic: per-core MTE2 misses and the shared HBM roofline
  L2,       // L2 traffic: per-core MTE2 hits, split-K atomics and the shared L2 roofline
  Cube,     // Cube (M pipe) cycles per fractal
  Vector,   // Vector (V pipe) cycles
  OnChip,   // local moves: MTE1 (L1->L0A/L0B), FIX (L0C->GM), MTE3 (UB->GM)
  Latency,  // the GM read/write latency each TLOAD/TSTORE waits on its pipe
  Spill,    // soft-capacity (host) overflow: extra compute per overflowing fraction
  Task,     // cycles per task started on a core
  Instr,    // cycles per instruction issued (flags included)
  Launch,   // cycles per kernel launch
};
inline constexpr int kNumCoefs = 10;
const char* coef_name(Coef c);  // "hbm", "l2", "cube", ...
inline constexpr Coef coef_at(int index) { return static_cast<Coef>(index); }

struct Coefficients {
  std::array<double, kNumCoefs> value{};
  // Provenance: what they were fitted for (empty backend and 0 samples = defaults).
  std::string target;
  std::string fingerprint;
  std::string backend;
  int samples = 0;
  double rms_log_error = 0;  // of the fit that produced them
  // A host's measured prices; none: its ISA's reference machine's (default_host_prices).
  std::optional<HostPrices> host_prices;

  bool fitted() const { return samples > 0; }  // a calibration's fit, not the defaults

  double operator[](Coef c) const { return value[static_cast<int>(c)]; }
  double& operator[](Coef c) { return value[static_cast<int>(c)]; }

  // Scales 1; overheads from the target's launch/dispatch figures and one cycle per
  // instruction issued.
  static Coefficients defaults(const Target& target);

  nlohmann::json to_json() const;
  // Usage Error naming the field for a missing or negative coefficient or unknown key.
  static Coefficients from_json(const nlohmann::json& j);
  void save(const std::string& path) const;          // atomically; Io Error naming the path
  static Coefficients load(const std::string& path);  // Io / Usage Error naming the path
};

}  // namespace pto
