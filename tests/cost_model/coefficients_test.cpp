// Coefficients: defaults from the target, JSON round trip, files, and errors that name
// the field or path.
#include "cost_model/coefficients.h"

#include <filesystem>
#include <fstream>
#include <random>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/target.h"
#include "tests/error_of.h"
#include "tests/temp_dir.h"

namespace pto {
namespace {

using testing::error_of;

TEST(Coefficients, DefaultsComeFromTheTarget) {
  Target t = load_target("ascend910b1");
  t.task_dispatch_cycles = 123;
  t.kernel_launch_cycles = 4567;
  const Coefficients c = Coefficients::defaults(t);
  EXPECT_EQ(c[Coef::Hbm], 1.0);
  EXPECT_EQ(c[Coef::Cube], 1.0);
  EXPECT_EQ(c[Coef::Task], 123.0);
  EXPECT_EQ(c[Coef::Launch], 4567.0);
  EXPECT_EQ(c.fingerprint, t.fingerprint());
  EXPECT_EQ(c.target, "ascend910b1");
}

TEST(Coefficients, JsonRoundTrips) {
  std::mt19937 rng(1);
  std::uniform_real_distribution<double> u(0, 100);
  for (int trial = 0; trial < 20; ++trial) {
    Coefficients c;
    for (double& v : c.value) v = u(rng);
    c.target = "ascend910b4";
    c.fingerprint = "0123456789abcdef";
    c.backend = "sim";
    c.samples = trial;
    c.rms_log_error = u(rng) / 100;
    const Coefficients back = Coefficients::from_json(nlohmann::json::parse(c.to_json().dump()));
    EXPECT_EQ(back.value, c.value);
    EXPECT_EQ(back.target, c.target);
    EXPECT_EQ(back.fingerprint, c.fingerprint);
    EXPECT_EQ(back.backend, c.backend);
    EXPECT_EQ(back.samples, c.samples);
    EXPECT_EQ(back.rms_log_error, c.rms_log_error);
  }
}

TEST(Coefficients, ParseErrorsNameTheField) {
  nlohmann::json j = Coefficients::defaults(load_target("ascend910b1")).to_json();
  auto with = [&](const std::function<void(nlohmann::json&)>& edit) {
    nlohmann::json k = j;
    edit(k);
    return error_of([&] { Coefficients::from_json(k); });
  };
  EXPECT_NE(with([](auto& k) { k["coefficients"]["hbm"] = -1; }).find("coefficients.hbm"),
            std::string::npos);
  EXPECT_NE(with([](auto& k) { k["coefficients"].erase("cube"); }).find("coefficients.cube: missing"),
            std::string::npos);
  EXPECT_NE(with([](auto& k) { k["coefficients"]["warp"] = 1; }).find("warp"), std::string::npos);
  EXPECT_NE(with([](auto& k) { k["colour"] = "red"; }).find("colour"), std::string::npos);
  EXPECT_NE(with([](auto& k) { k.erase("coefficients"); }).find("usage: coefficients: missing"),
            std::string::npos);
}

TEST(Coefficients, CorruptOrMissingFilesNameThePath) {
  const testing::TempDir temp("cost_corrupt");
  const std::string dir = temp.str();
  const std::string path = temp.write("bad.json", "{\"coefficients\": [");
  const std::string corrupt = error_of([&] { Coefficients::load(path); });
  EXPECT_NE(corrupt.find("usage"), std::string::npos) << corrupt;
  EXPECT_NE(corrupt.find(path), std::string::npos) << corrupt;
  const std::string missing = error_of([&] { Coefficients::load(dir + "/none.json"); });
  EXPECT_NE(missing.find("usage"), std::string::npos) << missing;  // a missing input file is bad input
  EXPECT_NE(missing.find("none.json"), std::string::npos) << missing;
}

}  // namespace
}  // namespace pto
