// The host probe (search/host_probe.h): each family's fit recovers the prices that made
// its times, whatever they are (random prices over the families' real amounts); a fit
// with fewer timed cases than prices gives nothing; a probe of this machine gives a
// usable price for everything it measures; bad requests are refused before any timing.
#include "search/host_probe.h"

#include <cmath>
#include <random>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/target.h"

namespace pto::search {
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

TEST(HostProbe, ThisMachinesPricesAreAllUsable) {
  // One quick round (the figures are noisy at this budget; that they come is the test).
  HostProbeOptions quick;
  quick.rounds = 1;
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
  // Every family but the stream one (matched, not fitted) reports a fit.
  size_t fitted = 0;
  for (const ProbeFit& f : r.fits) fitted += f.cycles.empty() ? 0 : 1;
  EXPECT_EQ(fitted, r.fits.size() - 1);
  // What could not be measured keeps the reference figure, and says so.
  const HostPrices reference = default_host_prices(host);
  for (const std::string& kept : r.kept) {
    const std::string key = kept.substr(0, kept.find(':'));
    EXPECT_EQ(prices.at(key), reference.to_json().at(key)) << kept;
  }
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
}  // namespace pto::search
