// The host probe (calibration/host_probe.h): each family's fit recovers the prices that made
// its times, whatever they are (random prices over the families' real amounts); a fit
// with fewer timed cases than prices gives nothing; the times a machine of known prices
// would take give back those prices, and a price whose family was not timed keeps the
// reference figure and says why; a probe of this machine gives a usable price for
// everything it measures; bad requests are refused before any timing.
#include "calibration/host_probe.h"

#include <cmath>
#include <random>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/op_library.h"
#include "core/target.h"
#include "cost_model/estimate.h"

namespace pto::calibration {
namespace {

// Times that the prices `truth` make exactly: Σ price x amount per case.
std::map<std::string, double> times_at(const ProbeFamily& f, const std::map<std::string, double>& truth) {
  std::map<std::string, double> ns;
  for (const ProbeCase& c : f.cases) {
    double t = 0;
    for (const auto& [regressor, price] : truth) {
      const auto amount = c.amounts.find(regressor);
      if (amount != c.amounts.end()) t += price * amount->second;
    }
    ns[c.name] = t;
  }
  return ns;
}

TEST(HostProbe, EachFamilysFitRecoversThePricesThatMadeItsTimes) {
  const Target host = load_target("host");
  std::vector<ProbeFamily> families = {kernel_family(host), cube_family(host), vector_family(host),
                                       element_family(host), row_family(host), pack_family(true, 256),
                                       pack_family(false, 1024)};
  std::mt19937 rng(3);
  std::uniform_real_distribution<double> log_price(std::log(0.01), std::log(1e5));
  for (const ProbeFamily& f : families) {
    ASSERT_GT(f.cases.size(), f.regressors.size()) << f.title;
    for (int trial = 0; trial < 5; ++trial) {
      std::map<std::string, double> truth;
      for (const std::string& r : f.regressors) truth[r] = std::exp(log_price(rng));
      const std::map<std::string, double> fitted = fit_family(f, times_at(f, truth));
      ASSERT_EQ(fitted.size(), truth.size()) << f.title;
      for (const auto& [r, price] : truth) {
        // Collinear amounts (a family whose regressors nearly move together) leave a
        // little slack; the time each price makes is what the fit must get right.
        EXPECT_NEAR(fitted.at(r), price, 1e-3 * price + 1e-6 * truth.begin()->second) << f.title << " " << r;
      }
    }
  }
}

TEST(HostProbe, AFitNeedsAsManyTimedCasesAsPrices) {
  const ProbeFamily f = cube_family(load_target("host"));
  std::map<std::string, double> ns = times_at(f, {{"base", 1e4}, {"tmatmul", 40}, {"block", 20}});
  while (ns.size() >= f.regressors.size()) ns.erase(ns.begin());
  EXPECT_TRUE(fit_family(f, ns).empty());
}

// Times a machine with these prices (cycles) would take in every family: the fitted
// families' by their amounts; the stream family's as the model at these prices
// predicts, times a level of its own (the derivation must read the shape alone).
std::map<std::string, double> machine_times(const Target& host, const std::vector<ProbeFamily>& families,
                                            const HostPrices& prices, const std::map<std::string, std::map<std::string, double>>& cycles) {
  const double ghz = host.clock_mhz / 1000.0;
  std::map<std::string, double> ns;
  for (const ProbeFamily& f : families) {
    if (f.title != "stream") {
      std::map<std::string, double> per_ns;
      for (const auto& [r, c] : cycles.at(f.title)) per_ns[r] = c / ghz;
      ns.merge(times_at(f, per_ns));
      continue;
    }
    Target one_core = host;
    one_core.aic_cores = one_core.aiv_cores = 1;
    Coefficients c = Coefficients::defaults(one_core);
    c.host_prices = prices;
    const TensorGraph g = build_graph(Workload{"rmsnorm", {2048, 1024}, DType::F32, {}});
    const CostModel model(g, one_core, c);
    for (const ProbeCase& sc : f.cases) {
      TileConfig t;
      t.vec = Shape{static_cast<int64_t>(sc.amounts.at("rows")), 1024};
      t.nbuffer = 1;
      ns[sc.name] = 1.7 * model.predict_ns(t);
    }
  }
  return ns;
}

TEST(HostProbe, DerivesThePricesOfAMachineFromItsTimes) {
  const Target host = load_target("host");
  const std::vector<ProbeFamily> families = probe_families(host);
  HostPrices truth = default_host_prices(host);
  truth.kernel_speedup = 2;
  truth.tmatmul_step = 40;
  truth.instr = 45;
  truth.pass = 0.1;
  truth.fp64_math = 1.4;
  truth.erf = 10;
  truth.row_call = 5;
  truth.pack_speedup = 1.5;
  truth.copy_speedup = 2;
  truth.stream_speedup = 3;
  const double own = 1.0 / std::max(1, host.vector_cost("add", DType::F32).parallelism);
  const std::map<std::string, std::map<std::string, double>> cycles = {
      {"kernel", {{"fma", 1 / truth.kernel_speedup}, {"block", 20}}},
      {"cube", {{"base", 1e5}, {"tmatmul", truth.tmatmul_step}, {"block", 20}}},
      {"vector", {{"add", 1e4}, {"softmax", 4e4}, {"instr", truth.instr}}},
      {"element", {{"pass", truth.pass + own}, {"fp64_math", truth.fp64_math}, {"erf", truth.erf},
                   {"load_byte", 0.13 / truth.copy_speedup}, {"store_byte", 0.02}}},
      {"row", {{"add", 1e4}, {"gelu", 3e4}, {"softmax", 2e4}, {"row_call", truth.row_call}, {"run_start", 3}}},
      {"pack A 256 KiB", {{"byte", 0.11 / 1.5}, {"run", 10}}},
      {"pack A 1024 KiB", {{"byte", 0.11 / 1.5}, {"run", 10}}},
      {"pack B 256 KiB", {{"byte", 0.27 / 1.5}, {"run", 10}}},
      {"pack B 1024 KiB", {{"byte", 0.27 / 1.5}, {"run", 10}}},
  };
  const HostProbeResult r = derive_host_prices(host, families, machine_times(host, families, truth, cycles));
  EXPECT_TRUE(r.kept.empty()) << r.kept.front();
  const nlohmann::json got = r.prices.to_json(), want = truth.to_json();
  for (const char* key : {"kernel_speedup", "tmatmul_step", "instr", "pass", "fp64_math", "erf", "row_call",
                          "pack_speedup", "copy_speedup"})
    EXPECT_NEAR(got.at(key).get<double>(), want.at(key).get<double>(), 1e-3 * want.at(key).get<double>()) << key;
  // The stream speed-up is searched on a grid 9 % a step.
  EXPECT_NEAR(r.prices.stream_speedup, truth.stream_speedup, 0.1 * truth.stream_speedup);
}

TEST(HostProbe, APriceWhoseFamilyWasNotTimedKeepsTheReferenceFigureAndSaysWhy) {
  const Target host = load_target("host");
  std::vector<ProbeFamily> families = probe_families(host);
  const HostPrices reference = default_host_prices(host);
  // Only the cube family timed: the TMATMUL step is derived, everything else is kept.
  std::map<std::string, double> ns;
  for (const ProbeFamily& f : families)
    if (f.title == "cube") ns = times_at(f, {{"base", 5e4}, {"tmatmul", 20}, {"block", 10}});
  const HostProbeResult r = derive_host_prices(host, families, ns);
  EXPECT_NEAR(r.prices.tmatmul_step, 20 * host.clock_mhz / 1000.0, 1e-6 * r.prices.tmatmul_step);
  EXPECT_EQ(r.kept.size(), 9u);
  for (const std::string& kept : r.kept) {
    const std::string key = kept.substr(0, kept.find(':'));
    EXPECT_EQ(r.prices.to_json().at(key), reference.to_json().at(key)) << kept;
    EXPECT_NE(kept.find("its fit gave no"), std::string::npos) << kept;
  }
}

TEST(HostProbe, ThisMachinesPricesAreAllUsable) {
  // Two quick rounds (the figures are noisy at this budget; that they come is the test).
  HostProbeOptions quick;
  quick.rounds = 2;
  quick.min_time_ms = 0;
  quick.min_repetitions = 1;
  size_t calls = 0, planned = 0;
  quick.progress = [&](size_t done, size_t total) {
    EXPECT_EQ(done, ++calls);
    planned = total;
  };
  const Target host = load_target("host");
  const HostProbeResult r = probe_host(host, quick);
  EXPECT_EQ(calls, planned);
  EXPECT_GT(planned, 50u);
  const nlohmann::json prices = r.prices.to_json();
  for (const auto& [key, value] : prices.items()) {
    if (!value.is_number()) continue;
    EXPECT_TRUE(std::isfinite(value.get<double>()) && value.get<double>() >= 0) << key << " " << value;
  }
  for (const char* rate : {"kernel_speedup", "pack_speedup", "copy_speedup", "stream_speedup"})
    EXPECT_GT(prices.at(rate).get<double>(), 0) << rate;
  EXPECT_EQ(r.prices.source, "probed on this machine");
  EXPECT_TRUE(std::isfinite(r.round_spread) && r.round_spread >= 0) << r.round_spread;
  // Every family but the stream one (matched, not fitted) reports a fit.
  size_t fitted = 0;
  for (const ProbeFit& f : r.fits) fitted += f.cycles.empty() ? 0 : 1;
  EXPECT_EQ(fitted, r.fits.size() - 1);
}

TEST(HostProbe, RefusesNpuTargetsAndBadOptionsBeforeTiming) {
  size_t timed = 0;
  HostProbeOptions counted;
  counted.progress = [&](size_t, size_t) { ++timed; };
  EXPECT_THROW(probe_host(load_target("ascend910b1"), counted), Error);
  HostProbeOptions bad = counted;
  bad.rounds = 0;
  EXPECT_THROW(probe_host(load_target("host"), bad), Error);
  bad = counted;
  bad.min_repetitions = 0;
  EXPECT_THROW(probe_host(load_target("host"), bad), Error);
  bad = counted;
  bad.min_time_ms = -1;
  EXPECT_THROW(probe_host(load_target("host"), bad), Error);
  EXPECT_EQ(timed, 0u);
}

}  // namespace
}  // namespace pto::calibration
