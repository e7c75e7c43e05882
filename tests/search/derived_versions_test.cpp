// The versions a tuning record carries are derived from what the code does
// (core/compiler_fingerprint.h, cost_model/model_fingerprint.h): the build embeds them,
// and these tests hold the embedded values to the code under test, and the probe set to
// covering what it claims.
#include <gtest/gtest.h>

#include <set>

#include "core/compiler_fingerprint.h"
#include "core/op_library.h"
#include "cost_model/model_fingerprint.h"
#include "search/tuning_record.h"

namespace pto {
namespace {

class DerivedVersions : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    targets_ = new std::vector<Target>(probe_targets());
    cases_ = new std::vector<ProbeCase>(probe_cases(*targets_));
  }
  static void TearDownTestSuite() {
    delete cases_;
    delete targets_;
  }
  static std::vector<Target>* targets_;
  static std::vector<ProbeCase>* cases_;
};
std::vector<Target>* DerivedVersions::targets_ = nullptr;
std::vector<ProbeCase>* DerivedVersions::cases_ = nullptr;

TEST_F(DerivedVersions, TheBuildEmbedsTheFingerprintsOfTheCodeItBuilt) {
  EXPECT_EQ(search::Versions::current().compiler, compiler_fingerprint(*cases_));
  EXPECT_EQ(search::Versions::current().cost_model, cost_model_fingerprint(*cases_));
}

TEST_F(DerivedVersions, ReadAsAKindLetterAndTwelveHexDigits) {
  for (const std::string& v : {search::Versions::current().compiler, search::Versions::current().cost_model}) {
    ASSERT_EQ(v.size(), 13u) << v;
    EXPECT_EQ(v.find_first_not_of("0123456789abcdef", 1), std::string::npos) << v;
  }
  EXPECT_EQ(search::Versions::current().compiler[0], 'c');
  EXPECT_EQ(search::Versions::current().cost_model[0], 'm');
}

TEST_F(DerivedVersions, ProbeEveryOpEveryAttributeAndRaggedShapesOnEveryTarget) {
  std::set<std::string> ops, attrs, ragged;
  std::set<const Target*> targets;
  for (const ProbeCase& c : *cases_) {
    ops.insert(c.workload.op);
    for (const auto& [name, value] : c.workload.attrs)
      if (value == 1) attrs.insert(c.workload.op + "." + name);
    if (c.workload.shape.back() != 96) ragged.insert(c.workload.op);
    targets.insert(c.target);
  }
  for (const OpDef& op : op_library()) {
    EXPECT_TRUE(ops.contains(op.name)) << op.name << " is not probed";
    EXPECT_TRUE(ragged.contains(op.name)) << op.name << " has no ragged shape in the probe set";
    for (const std::string& a : op.attrs) EXPECT_TRUE(attrs.contains(op.name + "." + a)) << op.name << "." << a;
  }
  EXPECT_EQ(targets.size(), targets_->size());
}

TEST_F(DerivedVersions, NeverDescribeThisMachine) {
  for (const Target& t : *targets_) EXPECT_NE(t.name, "host") << "the probe would differ from machine to machine";
  EXPECT_EQ(reference_host_target(64).fingerprint(), reference_host_target(64).fingerprint());
  EXPECT_NE(reference_host_target(32).fingerprint(), reference_host_target(64).fingerprint());
}

// A program of one case emitted differently changes the compiler's fingerprint; the
// same cases give the same one.
TEST_F(DerivedVersions, TheCompilersChangesWithOneEmittedProgram) {
  std::vector<ProbeCase> changed = *cases_;
  const std::string before = compiler_fingerprint(changed);
  EXPECT_EQ(compiler_fingerprint(changed), before);
  size_t i = 0;
  while (i < changed.size() && !(changed[i].config.vec && changed[i].config.vec->back() >= 32)) ++i;
  ASSERT_LT(i, changed.size());
  changed[i].config.vec->back() /= 2;
  EXPECT_NE(compiler_fingerprint(changed), before);
}

// A target whose HBM is slower prices its memory-bound probes differently: the cost
// model's fingerprint changes, the programs (which do not read that figure) do not.
TEST_F(DerivedVersions, TheCostModelsChangesWithAPredictionAndNotWithoutOne) {
  std::vector<Target> slower = *targets_;
  slower[0].hbm_gbps /= 2;
  slower[0].gm_read_bpc /= 2;
  const std::vector<ProbeCase> cases = probe_cases(slower);
  EXPECT_NE(cost_model_fingerprint(cases), cost_model_fingerprint(*cases_));
  EXPECT_EQ(compiler_fingerprint(cases), compiler_fingerprint(*cases_));
}

}  // namespace
}  // namespace pto
