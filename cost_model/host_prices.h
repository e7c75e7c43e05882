// HostPrices: what the CPU runtime's steps cost on one machine, in cycles of the host
// target's nominal clock — the prices the host cost model (cost_model/host_model.h)
// charges per FMA, per step, per element and per row call.
//
// Why a struct of its own: these are properties of a microarchitecture, not of the ISA
// the target detects. Measured on two machines (results/runtime_steps.md), an exp row
// cost 16.6 cycles an element on a Zen 3 and 1.6 on a Zen 5, a TMATMUL step 181 and 40:
// one coefficient per term cannot carry both ratios. The defaults are the figures
// measured on the reference machine of each ISA; `pto-tune calibrate` on a host
// measures this machine's (calibration/host_probe.h) and saves them with the coefficients
// (cost_model/coefficients.h), so that every prediction for it uses them.
#pragma once

#include <string>

#include <nlohmann/json_fwd.hpp>

namespace pto {

struct Target;

struct HostPrices {
  double kernel_speedup = 1;   // the micro-kernel's FMAs and loads, against the reference machine's
  double tmatmul_step = 100;   // a TMATMUL step with its two L0 views, beyond its FMAs
  double instr = 150;          // a vector task's instruction (flags count), a cube TLOAD / TSTORE
  double pass = 0.375;         // a row loop's load and store of an element, beside the op's own cycles
  double fp64_math = 17;       // an exp / log / tanh row, per element beyond the pass
  double erf = 75;             // an erf / erfc row, per element beyond the pass
  double row_call = 30;        // one call of a row loop
  double pack_speedup = 1;     // packing's rates against the AVX2 reference machine's
  double copy_speedup = 1;     // row loads and stores between GM and a buffer, against the same
  double stream_speedup = 1;   // a pass streaming from L2, the LLC and DRAM, against the same
  std::string source;          // where the figures come from, for people

  nlohmann::json to_json() const;
  // Usage Error naming the field for a missing, negative or unknown one (a price of 0
  // is allowed where the machine measured nothing; the rates must be positive).
  static HostPrices from_json(const nlohmann::json& j);
};

// The prices of the reference machine of the target's ISA: AVX-512 (simd_bytes 64), AVX2
// (32), else the portable kernel's, which is priced as AVX2.
HostPrices default_host_prices(const Target& target);

}  // namespace pto
