// Targets: the built-in descriptions carry the figures of shared/ascend-facts.md,
// JSON round-trips, the fingerprint follows every hardware field (and no descriptive
// one), user files load and malformed ones name the field; host detection reads sysfs
// and falls back sensibly where it is missing.
#include "core/target.h"

#include <filesystem>
#include <fstream>

#include <unistd.h>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/core/error_testing.h"
#include "tests/temp_dir.h"

namespace pto {
namespace {

using nlohmann::json;
using testing::expect_error;

constexpr int64_t KiB = 1024;
constexpr int64_t MiB = 1024 * 1024;

const char* const kAscendTargets[] = {"ascend910b1", "ascend910b2",  "ascend910b3",
                                      "ascend910b4", "ascend910_93", "ascend950pr"};

TEST(Target, BuiltinNamesAreTheAscendFilesAndHost) {
  std::vector<std::string> expected(std::begin(kAscendTargets), std::end(kAscendTargets));
  expected.push_back("host");
  std::vector<std::string> names = builtin_target_names();
  std::sort(names.begin(), names.end());
  std::sort(expected.begin(), expected.end());
  EXPECT_EQ(names, expected);
}

TEST(Target, EveryBuiltinLoadsUnderItsOwnNameWithPositiveFigures) {
  for (const std::string& name : builtin_target_names()) {
    const Target t = load_target(name);
    EXPECT_EQ(t.name, name);
    EXPECT_GT(t.aic_cores, 0) << name;
    EXPECT_GT(t.aiv_cores, 0) << name;
    EXPECT_GT(t.clock_mhz, 0) << name;
    for (int64_t capacity : {t.ub, t.l1, t.l0a, t.l0b, t.l0c, t.bt, t.fixbuf, t.l2_bytes}) {
      EXPECT_GT(capacity, 0) << name;
    }
    EXPECT_GT(t.hbm_gbps, 0) << name;
    EXPECT_GT(t.l2_gbps, t.hbm_gbps) << name;
    EXPECT_GT(t.cube_flops_per_cycle(DType::F16), 0) << name;
    EXPECT_GT(t.cube_flops_per_cycle(DType::F32), 0) << name;
  }
}

TEST(Target, Ascend910B1CarriesThePlatformFigures) {
  const Target t = load_target("ascend910b1");
  EXPECT_EQ(t.kind, TargetKind::Npu);
  EXPECT_TRUE(t.hard_capacity);
  EXPECT_TRUE(t.split_cores);
  EXPECT_EQ(t.aic_cores, 24);
  EXPECT_EQ(t.aiv_cores, 48);
  EXPECT_EQ(t.cores(CoreType::AIC), 24);
  EXPECT_EQ(t.cores(CoreType::AIV), 48);
  EXPECT_EQ(t.clock_mhz, 1850);
  EXPECT_EQ(t.l0a, 64 * KiB);
  EXPECT_EQ(t.l0b, 64 * KiB);
  EXPECT_EQ(t.l0c, 131072);
  EXPECT_EQ(t.l1, 512 * KiB);
  EXPECT_EQ(t.ub, 192 * KiB);
  EXPECT_EQ(t.l2_bytes, 192 * MiB);
  EXPECT_EQ(t.bt, 1024);
  EXPECT_EQ(t.fixbuf, 2048);
  EXPECT_EQ(t.align_bytes, 32);
  EXPECT_EQ(t.cube_flops_per_cycle(DType::F16), 8192);  // 16*16*16*2
  EXPECT_EQ(t.fractal.at(DType::I8).k, 32);
  EXPECT_EQ(t.gm_read_bpc, 40);  // fitted to published timings (results/sim_validation.md)
  EXPECT_EQ(t.l2_read_bpc, 110);
  EXPECT_EQ(t.l2_write_bpc, 86);
  EXPECT_EQ(t.l1_to_l0a_bpc, 256);  // measured by load_data_perf, half the .ini (results/sim_validation.md)
  EXPECT_EQ(t.l1_to_l0b_bpc, 128);
  EXPECT_EQ(t.l1_to_l0_latency, 28);
  EXPECT_EQ(t.l1_to_ub_bpc, 128);
  EXPECT_EQ(t.l0c_to_ub_bpc, 256);
  EXPECT_EQ(t.ub_to_gm_bpc, 64);
  EXPECT_EQ(t.ub_to_l1_bpc, 128);
  EXPECT_EQ(t.hbm_gbps, 1490);  // effective, as asc-devkit's data_copy reads (results/sim_validation.md)
  EXPECT_EQ(t.l2_gbps, 1490 * 5.0);  // fitted (results/sim_validation.md)
  EXPECT_EQ(t.cross_core_sync_latency, 3000);  // fitted on PI-fa (results/sim_validation.md)
  EXPECT_EQ(t.gm_min_burst_bytes, 512);  // the alignment the same guide asks for
  EXPECT_EQ(t.ub_copy_latency, 50);
  EXPECT_EQ(t.l1_copy_latency, 200);
  EXPECT_EQ(t.sync_latency, 1);
  EXPECT_EQ(t.vector_barrier, 18);
  EXPECT_GE(t.gm_read_latency, 307);
  EXPECT_LE(t.gm_read_latency, 347);
  EXPECT_FALSE(t.source.empty());
}

TEST(Target, OtherAscendTargetsDifferWhereTheFactsSay) {
  struct Expect {
    const char* name;
    int aic, aiv;
    double clock, hbm;
    int64_t l0c, ub, l2;
  };
  for (const Expect& e : {Expect{"ascend910b2", 24, 48, 1800, 1490, 128 * KiB, 192 * KiB, 192 * MiB},
                          Expect{"ascend910b3", 20, 40, 1800, 1490, 128 * KiB, 192 * KiB, 192 * MiB},
                          Expect{"ascend910b4", 20, 40, 1500, 800, 128 * KiB, 192 * KiB, 96 * MiB},
                          Expect{"ascend910_93", 24, 48, 1850, 1490, 128 * KiB, 192 * KiB, 192 * MiB},
                          Expect{"ascend950pr", 32, 64, 1650, 1627, 256 * KiB, 248 * KiB, 128 * MiB}}) {
    const Target t = load_target(e.name);
    EXPECT_EQ(t.aic_cores, e.aic) << e.name;
    EXPECT_EQ(t.aiv_cores, e.aiv) << e.name;
    EXPECT_EQ(t.clock_mhz, e.clock) << e.name;
    EXPECT_EQ(t.hbm_gbps, e.hbm) << e.name;
    EXPECT_EQ(t.l0c, e.l0c) << e.name;
    EXPECT_EQ(t.ub, e.ub) << e.name;
    EXPECT_EQ(t.l2_bytes, e.l2) << e.name;
  }
  EXPECT_NE(load_target("ascend950pr").notes.find("1.6 TB/s"), std::string::npos);
}

TEST(Target, VectorCostsFollowTheDtypeThenOpThenDefault) {
  const Target t = load_target("ascend910b1");
  EXPECT_EQ(t.vector_cost("add", DType::F16).latency, 6);
  EXPECT_EQ(t.vector_cost("add", DType::F16).parallelism, 128);
  EXPECT_EQ(t.vector_cost("add", DType::F32).parallelism, 64);
  EXPECT_EQ(t.vector_cost("mul", DType::F32).latency, 7);
  EXPECT_EQ(t.vector_cost("div", DType::F16).latency, 13);
  EXPECT_EQ(t.vector_cost("exp", DType::F16).latency, 12);
  EXPECT_EQ(t.vector_cost("exp", DType::F32).parallelism, 32);
  EXPECT_EQ(t.vector_cost("sqrt", DType::F16).parallelism, 32);
  EXPECT_EQ(t.vector_cost("sum", DType::F16).latency, 23);
  EXPECT_EQ(t.vector_cost("sum", DType::F32).latency, 20);
  EXPECT_EQ(t.vector_cost("no_such_op", DType::F16).latency, 10);
  EXPECT_EQ(t.vector_cost("no_such_op", DType::F16).parallelism, 128);

  Target bare = t;
  bare.vector_costs.clear();
  EXPECT_EQ(bare.vector_cost("add", DType::F16).latency, VectorCost{}.latency);
}

TEST(Target, NamesAreCaseInsensitive) {
  EXPECT_EQ(load_target("Ascend910B1").fingerprint(), load_target("ascend910b1").fingerprint());
  EXPECT_EQ(load_target("ASCEND950PR").name, "ascend950pr");
  EXPECT_EQ(load_target("HOST").name, "host");
}

TEST(Target, JsonRoundTripsForEveryBuiltin) {
  for (const std::string& name : builtin_target_names()) {
    const json j = load_target(name).to_json();
    EXPECT_EQ(Target::from_json(j).to_json(), j) << name;
  }
}

TEST(Target, FingerprintIsSixteenHexDigitsStableAndDistinct) {
  std::set<std::string> seen;
  for (const std::string& name : builtin_target_names()) {
    const std::string fp = load_target(name).fingerprint();
    EXPECT_EQ(fp.size(), 16u);
    EXPECT_EQ(fp.find_first_not_of("0123456789abcdef"), std::string::npos) << fp;
    EXPECT_EQ(load_target(name).fingerprint(), fp);
    EXPECT_TRUE(seen.insert(fp).second) << name;
  }
}

// The same JSON with one value changed (numbers grow, bools flip, strings change,
// maps change their first entry).
json changed(json value, const std::string& key) {
  if (value.is_boolean()) return !value.get<bool>();
  if (value.is_number_integer()) return value.get<int64_t>() + 1;
  if (value.is_number()) return value.get<double>() * 1.5 + 1;
  if (key == "kind") return value == "npu" ? "cpu" : "npu";
  if (value.is_string()) return value.get<std::string>() + "x";
  auto first = value.begin();
  const std::string first_key = first.value().begin().key();
  first.value()[first_key] = first.value()[first_key].get<int>() + 1;
  return value;
}

TEST(Target, FingerprintChangesWithEveryHardwareFieldAndNoDescriptiveOne) {
  for (const char* name : {"ascend910b1", "host"}) {
    const json base = load_target(name).to_json();
    const std::string fp = Target::from_json(base).fingerprint();
    for (const auto& [key, value] : base.items()) {
      if (key == "kind" && value == "npu") continue;  // an npu turned cpu lacks cpu figures; host covers kind
      json j = base;
      j[key] = changed(value, key);
      const Target t = Target::from_json(j);
      // hbm_bytes decides only whether a workload fits (core/global_memory.h).
      if (key == "notes" || key == "source" || key == "hbm_bytes") {
        EXPECT_EQ(t.fingerprint(), fp) << key;
      } else {
        EXPECT_NE(t.fingerprint(), fp) << name << " " << key;
      }
    }
  }
}

class TargetFile : public ::testing::Test {
 protected:
  std::string write(const std::string& name, const std::string& text) { return dir_.write(name, text); }
  testing::TempDir dir_{"target_test"};
};

TEST_F(TargetFile, AUserJsonOverridesTheBuiltinFigures) {
  json j = load_target("ascend910b1").to_json();
  j["name"] = "my910";
  j["l0c"] = 65536;
  j["aic_cores"] = 8;
  const std::string path = write("my910.json", j.dump(2));
  const Target t = load_target(path);
  EXPECT_EQ(t.name, "my910");
  EXPECT_EQ(t.l0c, 65536);
  EXPECT_EQ(t.aic_cores, 8);
  EXPECT_EQ(t.l1, 512 * KiB);
  EXPECT_NE(t.fingerprint(), load_target("ascend910b1").fingerprint());
}

TEST_F(TargetFile, OptionalFieldsTakeTheirDefaults) {
  const std::string path = write("minimal.json", R"({
    "name": "tiny", "kind": "npu", "aic_cores": 1, "aiv_cores": 2, "clock_mhz": 1000,
    "ub": 1024, "l1": 4096, "l0a": 512, "l0b": 512, "l0c": 1024, "bt": 64, "fixbuf": 64,
    "l2_bytes": 65536, "hbm_gbps": 10, "l2_gbps": 30, "fractal": {"fp16": {"m": 16, "k": 16, "n": 16}}})");
  const Target t = load_target(path);
  const Target defaults;
  EXPECT_EQ(t.gm_read_bpc, defaults.gm_read_bpc);
  EXPECT_EQ(t.align_bytes, defaults.align_bytes);
  EXPECT_TRUE(t.hard_capacity);
  EXPECT_TRUE(t.vector_costs.empty());
  expect_error([&] { t.cube_flops_per_cycle(DType::F32); }, ErrorCategory::Usage, {"tiny", "fp32"});
}

TEST_F(TargetFile, UnknownNamesListTheKnownOnes) {
  expect_error([] { load_target("ascend910z"); }, ErrorCategory::Usage,
               {"ascend910z", "ascend910b1", "ascend950pr", "host"});
  expect_error([] { load_target(""); }, ErrorCategory::Usage, {"ascend910b1"});
}

TEST_F(TargetFile, UnreadableOrInvalidFilesNameThePath) {
  const std::string dir = dir_.str();
  expect_error([&] { load_target(dir); }, ErrorCategory::Usage, {dir, "it is a folder"});
  const std::string broken = write("broken.json", "{\"name\": ");
  expect_error([&] { load_target(broken); }, ErrorCategory::Usage, {broken, "not valid JSON"});
  const std::string bad = write("bad.json", R"({"name": "x"})");
  expect_error([&] { load_target(bad); }, ErrorCategory::Usage, {bad, "target.kind: missing"});
}

TEST(Target, MalformedFieldsAreUsageErrorsNamingTheField) {
  const json base = load_target("ascend910b1").to_json();
  const struct {
    std::string key;
    json value;  // null: remove the key
    std::vector<std::string_view> parts;
  } cases[] = {
      {"ub", nullptr, {"target.ub: missing"}},
      {"fractal", nullptr, {"target.fractal: missing"}},
      {"aic_cores", "24", {"target.aic_cores: expected an integer from 1 to 4096, got \"24\""}},
      {"aic_cores", 0, {"target.aic_cores: expected an integer from 1 to 4096, got 0"}},
      {"aic_cores", 2147483648, {"target.aic_cores: expected an integer from 1 to 4096, got 2147483648"}},
      {"l1", 0, {"target.l1: expected an integer from 1 to 1073741824, got 0"}},
      {"l0c", -131072, {"target.l0c: expected an integer from 1 to 1073741824, got -131072"}},
      {"l2_bytes", 1.5, {"target.l2_bytes: expected an integer from 1 to 1099511627776, got 1.5"}},
      {"clock_mhz", -1, {"target.clock_mhz: expected a number from 10 to 100000, got -1"}},
      {"clock_mhz", 1e-300, {"target.clock_mhz: expected a number from 10 to 100000, got 1e-300"}},
      {"hbm_gbps", 1e-300, {"target.hbm_gbps: expected a number from 0.001 to 10000000, got 1e-300"}},
      {"gm_read_bpc", 1e-300, {"target.gm_read_bpc: expected a number from 0.001 to 1000000, got 1e-300"}},
      {"hbm_gbps", "fast", {"target.hbm_gbps: expected a number from 0.001 to 10000000, got \"fast\""}},
      {"gm_read_latency", -5, {"target.gm_read_latency: expected an integer from 0 to 100000000, got -5"}},
      {"hard_capacity", 1, {"target.hard_capacity: expected true or false, got 1"}},
      {"kind", "gpu", {"target.kind: expected \"npu\" or \"cpu\", got \"gpu\""}},
      {"name", "", {"target.name: expected a non-empty string"}},
      {"name", 7, {"target.name: expected a string, got 7"}},
      {"fractal", json::parse(R"({"fp64": {"m": 16, "k": 16, "n": 16}})"), {"target.fractal.fp64: unknown dtype"}},
      {"fractal", json::parse(R"({"fp16": {"m": 16, "n": 16}})"), {"target.fractal.fp16.k: missing"}},
      {"fractal", json::parse(R"({"fp16": {"m": 16, "k": 0, "n": 16}})"), {"target.fractal.fp16.k: expected an integer from 1 to 1024, got 0"}},
      {"fractal", json::parse(R"({"fp16": {"m": 16, "k": 16, "n": 16, "q": 1}})"), {"target.fractal.fp16: unknown key \"q\""}},
      {"fractal", json::parse("[16, 16, 16]"), {"target.fractal: expected an object"}},
      {"vector_costs", json::parse(R"({"add": {"latency": 6, "parallelism": 0}})"), {"target.vector_costs.add.parallelism: expected an integer from 1 to 1000000, got 0"}},
      {"vector_costs", json::parse(R"({"add:fp99": {"latency": 6}})"), {"target.vector_costs.add:fp99: unknown dtype \"fp99\""}},
      {"vector_costs", json::parse(R"({"add": {"cycles": 6}})"), {"target.vector_costs.add: unknown key \"cycles\""}},
      {"l3_bytes", 1, {"target: unknown key \"l3_bytes\""}},
  };
  for (const auto& c : cases) {
    json j = base;
    if (c.value.is_null()) {
      j.erase(c.key);
    } else {
      j[c.key] = c.value;
    }
    expect_error([&] { Target::from_json(j); }, ErrorCategory::Usage, c.parts, c.key + "=" + c.value.dump());
  }
  expect_error([] { Target::from_json(json::array()); }, ErrorCategory::Usage, {"target: expected an object"});
}

// Every numeric field has a sane range: an absurd value (negative, 1e300, or 1e-300
// where the field cannot be near zero) is rejected naming the field.
TEST(Target, EveryNumericFieldIsRejectedOutsideItsRangeNamingTheField) {
  const json base = load_target("ascend910b1").to_json();
  int fields = 0;
  for (const auto& [key, value] : base.items()) {
    if (!value.is_number()) continue;
    ++fields;
    for (const double absurd : {-1.0, 1e300, 1e-300}) {
      if (absurd == 1e-300 && key == "cpu_flops_per_cycle") continue;  // 0 is its "not a cpu"
      json j = base;
      j[key] = absurd;
      expect_error([&] { Target::from_json(j); }, ErrorCategory::Usage, {"target." + key + ": expected a"},
                   key + "=" + std::to_string(absurd));
    }
  }
  EXPECT_GT(fields, 30);
}

TEST(Target, WhatTargetsJsonPrintsIsAcceptedBackAsATargetFile) {
  testing::TempDir dir("target_roundtrip");
  for (const std::string& name : builtin_target_names()) {
    const Target t = load_target(name);
    json j = t.to_json();
    j["fingerprint"] = t.fingerprint();
    // `targets --json --target NAME`: a list of one, with the fingerprint.
    const Target back = load_target(dir.write(name + ".json", json::array({j}).dump(2)));
    EXPECT_EQ(back.fingerprint(), t.fingerprint()) << name;
    EXPECT_EQ(load_target(dir.write(name + "_object.json", j.dump())).fingerprint(), t.fingerprint()) << name;
  }
  json all = json::array();
  for (const std::string& name : {"ascend910b1", "ascend910b2"}) all.push_back(load_target(name).to_json());
  expect_error([&] { load_target(dir.write("all.json", all.dump())); }, ErrorCategory::Usage,
               {"a list of 2 targets", "\"ascend910b1\"", "--target NAME"});
}

TEST(Target, ACpuTargetNeedsItsComputeRateAndSimdWidth) {
  json j = load_target("host").to_json();
  j["cpu_flops_per_cycle"] = 0;
  expect_error([&] { Target::from_json(j); }, ErrorCategory::Usage, {"target.cpu_flops_per_cycle"});
  j = load_target("host").to_json();
  j.erase("simd_bytes");
  expect_error([&] { Target::from_json(j); }, ErrorCategory::Usage, {"target.simd_bytes"});
}

TEST(HostTarget, DetectionGivesAConsistentCpuTarget) {
  const Target t = detect_host_target();
  EXPECT_EQ(t.name, "host");
  EXPECT_EQ(t.kind, TargetKind::Cpu);
  EXPECT_FALSE(t.hard_capacity);
  EXPECT_FALSE(t.split_cores);
  EXPECT_GT(t.aic_cores, 0);
  EXPECT_EQ(t.aic_cores, t.aiv_cores);
  EXPECT_GT(t.clock_mhz, 0);
  for (int64_t capacity : {t.ub, t.l1, t.l0a, t.l0b, t.l0c, t.bt, t.fixbuf, t.l2_bytes}) EXPECT_GT(capacity, 0);
  EXPECT_EQ(t.l0a, t.ub / 2);
  EXPECT_EQ(t.l0c, t.ub);
  EXPECT_LE(t.ub, t.l1);
  EXPECT_TRUE(t.simd_bytes == 16 || t.simd_bytes == 32 || t.simd_bytes == 64) << t.simd_bytes;
  EXPECT_EQ(t.align_bytes, t.simd_bytes);
  EXPECT_EQ(t.cpu_flops_per_cycle, 2.0 * t.simd_bytes / 4 * 2);
  EXPECT_GT(t.hbm_gbps, 0);
  EXPECT_GT(t.gm_read_bpc, 0);
  // Detection is deterministic, so records keyed by the fingerprint stay found.
  EXPECT_EQ(detect_host_target().fingerprint(), t.fingerprint());
}

class FakeSysfs : public TargetFile {
 protected:
  void add_cache(int index, int level, const std::string& type, const std::string& size) {
    const auto d = dir_.path() / "cache" / ("index" + std::to_string(index));
    std::filesystem::create_directories(d);
    std::ofstream(d / "level") << level << "\n";
    std::ofstream(d / "type") << type << "\n";
    std::ofstream(d / "size") << size << "\n";
  }
  HostSources sources() const {
    return {(dir_.path() / "cache").string(), (dir_.path() / "cpuinfo_max_freq").string(), (dir_.path() / "cpuinfo").string()};
  }
};

TEST_F(FakeSysfs, CachesAndClockComeFromTheFiles) {
  add_cache(0, 1, "Data", "48K");
  add_cache(1, 1, "Instruction", "32K");
  add_cache(2, 2, "Unified", "2048K");
  add_cache(3, 3, "Unified", "32M");
  write("cpuinfo", "processor\t: 0\ncpu MHz\t\t: 2596.122\nprocessor\t: 1\ncpu MHz\t\t: 2410.000\n");
  Target t = detect_host_target(sources());
  EXPECT_EQ(t.ub, 48 * KiB);
  EXPECT_EQ(t.l0a, 24 * KiB);
  EXPECT_EQ(t.l1, 2 * MiB);
  EXPECT_EQ(t.l2_bytes, 32 * MiB);
  EXPECT_EQ(t.clock_mhz, 2600);  // rounded, so frequency scaling does not move the fingerprint

  write("cpuinfo_max_freq", "3500000\n");
  EXPECT_EQ(detect_host_target(sources()).clock_mhz, 3500);
  EXPECT_EQ(Target::from_json(t.to_json()).to_json(), t.to_json());
}

TEST_F(FakeSysfs, WithoutL3TheLastLevelIsAtLeastL2) {
  add_cache(0, 1, "Data", "64K");
  add_cache(2, 2, "Unified", "16M");
  const Target t = detect_host_target(sources());
  EXPECT_EQ(t.ub, 64 * KiB);
  EXPECT_EQ(t.l1, 16 * MiB);
  EXPECT_EQ(t.l2_bytes, 16 * MiB);
}

TEST_F(FakeSysfs, MissingFilesFallBackToDocumentedDefaults) {
  add_cache(0, 1, "Data", "garbage");
  HostSources without_cpuid = sources();
  without_cpuid.ask_the_cpu = false;
  const Target t = detect_host_target(without_cpuid);
  EXPECT_EQ(t.ub, 32 * KiB);
  EXPECT_EQ(t.l1, 1 * MiB);
  EXPECT_EQ(t.l2_bytes, 8 * MiB);
  EXPECT_EQ(t.clock_mhz, 2000);
  EXPECT_GT(t.aic_cores, 0);
}

TEST_F(FakeSysfs, WithoutSysfsCachesL1dAndL2ComeFromTheCpuButTheLastLevelDoesNot) {
  // Some VMs have no /sys/.../cache: the C library reads L1d and L2 from CPUID. Its L3
  // may be the host package's (a Zen 5 guest reported 508 MiB), so the LLC stays the
  // documented default unless sysfs names it.
  const long l1d = sysconf(_SC_LEVEL1_DCACHE_SIZE), l2 = sysconf(_SC_LEVEL2_CACHE_SIZE);
  const Target t = detect_host_target(sources());
  EXPECT_EQ(t.ub, l1d > 0 ? l1d : 32 * KiB);
  EXPECT_EQ(t.l1, l2 > 0 ? l2 : 1 * MiB);
  EXPECT_EQ(t.l2_bytes, std::max<int64_t>(t.l1, 8 * MiB));

  add_cache(0, 1, "Data", "80K");  // sysfs wins where it says something
  EXPECT_EQ(detect_host_target(sources()).ub, 80 * KiB);
  EXPECT_EQ(detect_host_target(sources()).l1, l2 > 0 ? l2 : 1 * MiB);
}

}  // namespace
}  // namespace pto
