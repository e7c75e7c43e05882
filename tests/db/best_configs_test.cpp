// TuningDb::best_configs() (the JIT lookup's one-pass load) against best_records() (the
// SQL window query export and merge use), and DbConfigProvider loaded from a file
// against one built from best_records(): on random databases with stale records
// (other compiler or cost-model versions), two targets and another fingerprint of one
// of them, four backends, failures, and ties on time, timestamp and host, both loads
// keep the same record per key and serve the same configs.
#include <map>
#include <memory>
#include <random>
#include <set>
#include <tuple>

#include <gtest/gtest.h>

#include "core/config_chain.h"
#include "core/op_library.h"
#include "db/config_lookup.h"
#include "db/tuning_db.h"
#include "tests/db/records_testing.h"
#include "tests/temp_dir.h"

namespace pto::db {
namespace {

using search::TuningRecord;

const Target& b1() {
  static const Target t = load_target("ascend910b1");
  return t;
}
const Target& b2() {
  static const Target t = load_target("ascend910b2");
  return t;
}

const std::vector<std::string> kConfigs = {
    R"({"cube":{"m":[64,64],"k":[32,64],"n":[64,128]},"nbuffer":2})",
    R"({"cube":{"m":[32,32],"k":[32,64],"n":[64,64]}})",
    R"({"cube":{"m":[256,256],"k":[64,256],"n":[256,256]}})",  // too big for ascend910b1's L0C
    R"({"cube":{"m":[128,128],"k":[64,128],"n":[128,128]},"l2_group":[4,4]})",
};

std::vector<TuningRecord> random_database(std::mt19937_64& rng, size_t n) {
  struct TargetName {
    std::string name, fingerprint;
  };
  const std::vector<TargetName> targets = {
      {b1().name, b1().fingerprint()}, {b2().name, b2().fingerprint()}, {b1().name, "00000000deadbeef"}};
  const std::vector<std::string> backends = {"npu", "cpu", "sim", "model"};
  std::vector<TuningRecord> out;
  for (size_t i = 0; i < n; ++i) {
    const Shape s{int64_t{64} << (rng() % 5), int64_t{64} << (rng() % 5), 64 + 64 * static_cast<int64_t>(rng() % 3)};
    const TargetName& t = targets[rng() % targets.size()];
    TuningRecord r = db::testing::make_record(Workload{"matmul", s, DType::F16, {}}.key(), kConfigs[rng() % kConfigs.size()],
                                             100.0 * static_cast<double>(1 + rng() % 4), t.fingerprint,
                                             backends[rng() % backends.size()]);
    r.target_name = t.name;
    r.measurement.timestamp = static_cast<int64_t>(rng() % 3);  // ties, broken by host and the rest
    r.measurement.host = rng() % 2 ? "host-a" : "host-b";
    switch (rng() % 6) {
      case 0: r.versions.compiler = "0.0.1"; break;
      case 1: r.versions.cost_model = "0.0.2"; break;
      default: break;
    }
    if (rng() % 7 == 0) {
      r.measurement.status = measure::Status::RUNTIME_ERROR;
      r.measurement.error = "crashed";
    }
    out.push_back(std::move(r));
  }
  return out;
}

// key -> config text and versions, from either load.
using Served = std::map<std::tuple<std::string, std::string, std::string>, std::string>;

Served served_of(const std::vector<TuningRecord>& records) {
  Served out;
  for (const TuningRecord& r : records)
    out[{r.workload.key(), r.target_fingerprint, r.backend}] =
        r.config.to_string() + " " + r.versions.compiler + "/" + r.versions.cost_model + " " + r.target_name;
  return out;
}

Served served_of(const BestConfigs& best) {
  Served out;
  for (const BestConfigs::Entry& e : best.entries) {
    const auto& target = best.targets[e.target];
    out[{best.workload_keys[e.workload], target.fingerprint, e.backend}] =
        best.configs[e.config].to_string() + " " + e.versions.compiler + "/" + e.versions.cost_model + " " + target.name;
  }
  return out;
}

TEST(BestConfigs, KeepsTheRecordBestRecordsKeepsForRandomDatabases) {
  std::mt19937_64 rng(31);
  for (int trial = 0; trial < 6; ++trial) {
    const pto::testing::TempDir dir("best_configs");
    const std::string path = dir.str() + "/t.db";
    auto db = TuningDb::open(path);
    db->commit(random_database(rng, 50 + rng() % 400));
    const BestConfigs best = db->best_configs();
    const std::vector<TuningRecord> reference = db->best_records();
    ASSERT_FALSE(reference.empty());
    EXPECT_EQ(best.entries.size(), reference.size());
    EXPECT_EQ(served_of(best), served_of(reference)) << "trial " << trial;
  }
}

TEST(BestConfigs, AProviderLoadedFromTheFileServesWhatOneFromBestRecordsServes) {
  std::mt19937_64 rng(37);
  for (int trial = 0; trial < 4; ++trial) {
    const pto::testing::TempDir dir("best_configs_lookup");
    const std::string path = dir.str() + "/t.db";
    const std::vector<TuningRecord> records = random_database(rng, 100 + rng() % 300);
    TuningDb::open(path)->commit(records);
    const auto loaded = std::make_shared<DbConfigProvider>(path);
    const auto reference = std::make_shared<DbConfigProvider>(TuningDb::open(path, OpenMode::ReadOnly)->best_records());
    EXPECT_EQ(loaded->size(), reference->size());
    ConfigChain loaded_lookup({loaded}), reference_lookup({reference});  // the database's answer, else the default
    std::set<Shape> asks;
    for (const TuningRecord& r : records) {
      asks.insert(r.workload.shape);
      asks.insert({r.workload.shape[0] + 1, r.workload.shape[1], r.workload.shape[2] * 3});  // nearest or stale
    }
    for (const Target* t : {&b1(), &b2()}) {
      for (const Shape& s : asks) {
        const Workload w{"matmul", s, DType::F16, {}};
        const ConfigChoice a = loaded_lookup.choose(w, *t), b = reference_lookup.choose(w, *t);
        EXPECT_EQ(a.describe(), b.describe()) << w.key() << " on " << t->name;
        EXPECT_EQ(a.config, b.config) << w.key() << " on " << t->name;
      }
    }
  }
}

}  // namespace
}  // namespace pto::db
