// HostPrices (cost_model/host_prices.h): the reference figures follow the ISA, the JSON
// form round-trips and every bad field is a usage error naming it, calibration files
// carry the prices (and older files without them still load), and each price moves
// the host model's prediction the way a faster or slower machine would, on random
// feasible configs.
#include "cost_model/host_prices.h"

#include <functional>
#include <random>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/op_library.h"
#include "core/target.h"
#include "cost_model/coefficients.h"
#include "cost_model/estimate.h"
#include "cost_model/host_model.h"
#include "tests/cost_model/fixed_host.h"
#include "tests/cost_model/random_configs.h"
#include "tests/error_of.h"

namespace pto {
namespace {

using nlohmann::json;

using testing::error_of;

Target host_with_simd(int simd_bytes) {
  Target t = testing::fixed_host();
  t.simd_bytes = simd_bytes;
  return t;
}

// Every price field by its JSON key (all but "source"), as a way to vary one at a time.
std::vector<std::string> price_keys() {
  std::vector<std::string> keys;
  const json prices = HostPrices{}.to_json();
  for (const auto& [key, value] : prices.items())
    if (value.is_number()) keys.push_back(key);
  return keys;
}
const std::vector<std::string> kPriceKeys = price_keys();

TEST(HostPrices, ReferenceFiguresFollowTheIsa) {
  const HostPrices avx512 = default_host_prices(host_with_simd(64));
  const HostPrices avx2 = default_host_prices(host_with_simd(32));
  const HostPrices portable = default_host_prices(host_with_simd(16));
  // The AVX-512 machine packed twice as fast and called a row loop for ~4 cycles; the
  // rest of its figures are the AVX2 machine's, which the portable kernel also gets.
  EXPECT_EQ(avx512.pack_speedup, 2);
  EXPECT_EQ(avx512.row_call, 4);
  EXPECT_EQ(avx2.pack_speedup, 1);
  EXPECT_EQ(avx2.row_call, 30);
  for (const HostPrices* p : {&avx512, &avx2, &portable}) {
    EXPECT_EQ(p->tmatmul_step, avx2.tmatmul_step);
    EXPECT_EQ(p->erf, avx2.erf);
    EXPECT_EQ(p->kernel_speedup, 1);
    EXPECT_NE(p->source.find("defaults"), std::string::npos) << p->source;
  }
  EXPECT_EQ(portable.to_json().dump(), [&] {
    json j = avx2.to_json();
    j["source"] = portable.source;
    return j.dump();
  }());
}

TEST(HostPrices, JsonRoundTripsEveryField) {
  ASSERT_EQ(kPriceKeys.size(), 10u);  // the loops below cover every price
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> u(0.01, 500);
  for (int trial = 0; trial < 20; ++trial) {
    json j = default_host_prices(host_with_simd(64)).to_json();
    for (const std::string& key : kPriceKeys) j[key] = u(rng);
    j["source"] = "trial " + std::to_string(trial);
    EXPECT_EQ(HostPrices::from_json(j).to_json(), j);
  }
}

TEST(HostPrices, BadFieldsAreUsageErrorsNamingThem) {
  const json good = default_host_prices(host_with_simd(64)).to_json();
  auto with = [&](const std::function<void(json&)>& edit) {
    json j = good;
    edit(j);
    return error_of([&] { HostPrices::from_json(j); });
  };
  for (const std::string& key : kPriceKeys) {
    EXPECT_NE(with([&](json& j) { j.erase(key); }).find("usage: host_prices." + key + ": missing"), std::string::npos);
    EXPECT_NE(with([&](json& j) { j[key] = -1; }).find("host_prices." + key), std::string::npos);
    EXPECT_NE(with([&](json& j) { j[key] = "fast"; }).find("host_prices." + key), std::string::npos);
  }
  // A price may be 0 (the machine measured nothing); a rate the model divides by may not.
  EXPECT_EQ(with([](json& j) { j["row_call"] = 0; }), "no error");
  for (const char* rate : {"kernel_speedup", "pack_speedup", "copy_speedup", "stream_speedup"})
    EXPECT_NE(with([&](json& j) { j[rate] = 0; }).find(std::string("host_prices.") + rate), std::string::npos);
  EXPECT_NE(with([](json& j) { j["warp_drive"] = 1; }).find("warp_drive"), std::string::npos);
  EXPECT_NE(error_of([] { HostPrices::from_json(json::array()); }).find("usage: host_prices"), std::string::npos);
}

TEST(HostPrices, TravelWithTheCoefficientsAndOlderFilesLoadWithout) {
  Coefficients c = Coefficients::defaults(testing::fixed_host());
  EXPECT_FALSE(c.host_prices.has_value());
  EXPECT_FALSE(c.to_json().contains("host_prices"));
  EXPECT_FALSE(Coefficients::from_json(c.to_json()).host_prices.has_value());
  HostPrices p = default_host_prices(host_with_simd(64));
  p.erf = 9.5;
  p.source = "probed";
  c.host_prices = p;
  const Coefficients back = Coefficients::from_json(json::parse(c.to_json().dump()));
  ASSERT_TRUE(back.host_prices.has_value());
  EXPECT_EQ(back.host_prices->to_json(), p.to_json());
  json bad = c.to_json();
  bad["host_prices"]["erf"] = -3;
  EXPECT_NE(error_of([&] { Coefficients::from_json(bad); }).find("host_prices.erf"), std::string::npos);
}

// The model of `g` on the host at `prices`.
CostModel priced(const TensorGraph& g, const Target& host, const HostPrices& prices) {
  Coefficients c = Coefficients::defaults(host);
  c.host_prices = prices;
  return CostModel(g, host, c);
}

TEST(HostPrices, EachPriceMovesThePredictionAsAFasterOrSlowerMachineWould) {
  // On random feasible configs of a matmul and of gelu and layernorm: a price twice as
  // high never predicts faster, a speed-up twice as high never predicts slower; and on
  // some config each changes the prediction (no price is dead).
  const Target host = testing::fixed_host();
  const HostPrices base = default_host_prices(host);
  std::mt19937 rng(11);
  const TensorGraph matmul = build_graph(testing::matmul_workload(333, 777, 555, DType::F32));
  std::vector<std::pair<const TensorGraph*, TileConfig>> cases;
  std::vector<TensorGraph> rows;
  for (const char* op : {"gelu", "layernorm", "softmax"}) rows.push_back(build_graph(testing::row_workload(op, 2048, 1024)));
  const CostModel reference(matmul, host);
  for (int tries = 0; tries < 400 && cases.size() < 12; ++tries) {
    const TileConfig c = testing::random_cube_config(rng);
    if (reference.analyze(c).feasible) cases.emplace_back(&matmul, c);
  }
  for (const TensorGraph& g : rows) {
    const CostModel m(g, host);
    for (int tries = 0, found = 0; tries < 400 && found < 8; ++tries) {
      const TileConfig c = testing::random_row_config(rng, 1024);
      if (m.analyze(c).feasible) cases.emplace_back(&g, c), ++found;
    }
  }
  ASSERT_GE(cases.size(), 30u);
  for (const std::string& key : kPriceKeys) {
    json doubled = base.to_json();
    doubled[key] = 2 * doubled[key].get<double>();
    const HostPrices changed = HostPrices::from_json(doubled);
    const bool speedup = key.find("speedup") != std::string::npos;
    bool moved = false;
    for (const auto& [g, c] : cases) {
      const double before = priced(*g, host, base).predict_ns(c), after = priced(*g, host, changed).predict_ns(c);
      if (speedup) EXPECT_LE(after, before * (1 + 1e-12)) << key << " " << c.to_string();
      else EXPECT_GE(after, before * (1 - 1e-12)) << key << " " << c.to_string();
      moved = moved || std::abs(after - before) > 1e-9 * before;
    }
    EXPECT_TRUE(moved) << key << " changes no prediction";
  }
}

TEST(HostPrices, NewCoefficientsRepriceTheModel) {
  // set_coefficients() with other prices predicts what a model built with them does.
  const TensorGraph g = build_graph(testing::row_workload("gelu", 512, 1024));
  const Target host = testing::fixed_host();
  TileConfig tile;
  tile.vec = Shape{16, 1024};
  HostPrices cheap = default_host_prices(host);
  cheap.erf /= 10;
  CostModel model(g, host);
  const double before = model.predict_ns(tile);
  Coefficients c = model.coefficients();
  c.host_prices = cheap;
  model.set_coefficients(c);
  EXPECT_DOUBLE_EQ(model.predict_ns(tile), priced(g, host, cheap).predict_ns(tile));
  EXPECT_LT(model.predict_ns(tile), before);
}

}  // namespace
}  // namespace pto
