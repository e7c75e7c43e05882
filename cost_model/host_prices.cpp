// HostPrices (see host_prices.h): the reference machines' figures and the JSON form.
#include "cost_model/host_prices.h"

#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/json_read.h"
#include "core/target.h"

namespace pto {

namespace jr = json_read;
using nlohmann::json;

namespace {

// The figures, by JSON key; `rate` marks those that divide (must be positive).
struct Field {
  const char* key;
  double HostPrices::*price;
  bool rate;
};
constexpr Field kFields[] = {
    {"kernel_speedup", &HostPrices::kernel_speedup, true}, {"tmatmul_step", &HostPrices::tmatmul_step, false},
    {"instr", &HostPrices::instr, false},                {"pass", &HostPrices::pass, false},
    {"fp64_math", &HostPrices::fp64_math, false},        {"erf", &HostPrices::erf, false},
    {"row_call", &HostPrices::row_call, false},          {"pack_speedup", &HostPrices::pack_speedup, true},
    {"copy_speedup", &HostPrices::copy_speedup, true},   {"stream_speedup", &HostPrices::stream_speedup, true},
};

}  // namespace

// The AVX2 figures are the Zen 3 VM's, from bench/runtime_steps_bench
// (results/runtime_steps.md):
// - kernel_speedup: 1, the kernel's FMA and load rates (HostModel) being that machine's;
// - tmatmul_step: the cube fit's median over nine runs, 99 (they spread from -26 to 258);
// - instr: add's vector task of 4 steps cost 1290-1440 cycles against 8 x 150, softmax's
//   of 9 steps 2130-2450 against 13 x 150 (a task's four flags stand in for its set-up);
// - pass: with an fp32 op's own 1/8 cycle, the half cycle a pass cost (0.49-0.63);
// - fp64_math, erf: the element fit over eight fused ops (the runtime's fp64 expansions);
// - row_call: never measured there; lower prices ranked its saved samples worse.
// The AVX-512 figures are the Zen 5 VM's where they differ far enough to reorder configs
// (results/cost_model_ranking_cpu.md, 0.4.7): packing
// 2.1x (B panels) to 2.4x (A panels) the AVX2 machine's rates; a row loop's call ~4
// cycles (the row family over add, gelu and softmax: 3.8). Its other prices are lower
// too, by different factors; `pto-tune calibrate` measures them on the machine.
HostPrices default_host_prices(const Target& target) {
  HostPrices p;
  if (target.simd_bytes == 64) {
    p.pack_speedup = 2;
    p.row_call = 4;
    p.source = "defaults: the AVX-512 reference machine (Zen 5 VM)";
  } else if (target.simd_bytes == 32) {
    p.source = "defaults: the AVX2 reference machine (Zen 3 VM)";
  } else {
    p.source = "defaults: the AVX2 reference machine's, for the portable kernel";
  }
  return p;
}

json HostPrices::to_json() const {
  json j = json::object();
  for (const Field& f : kFields) j[f.key] = this->*f.price;
  j["source"] = source;
  return j;
}

HostPrices HostPrices::from_json(const json& j) {
  jr::object(j, "host_prices");
  std::vector<std::string_view> known{"source"};
  for (const Field& f : kFields) known.emplace_back(f.key);
  jr::reject_unknown_keys(j, "host_prices", known);
  HostPrices p;
  for (const Field& f : kFields) {
    const std::string path = jr::member_path("host_prices", f.key);
    if (!j.contains(f.key)) usage_error(path + ": missing");
    p.*f.price = jr::positive_number(j.at(f.key), path, /*allow_zero=*/!f.rate);
  }
  if (j.contains("source")) p.source = jr::string(j.at("source"), "host_prices.source");
  return p;
}

}  // namespace pto
