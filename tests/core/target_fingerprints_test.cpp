// TargetFingerprints: a target's own fingerprint, hashed once per name.
#include <gtest/gtest.h>

#include "core/target_fingerprints.h"
#include "tests/builtin_targets.h"

namespace pto {
namespace {

TEST(TargetFingerprints, IsTheTargetsFingerprintKeptByName) {
  TargetFingerprints fingerprints;
  const std::string& first = fingerprints.of(testing::npu());
  EXPECT_EQ(first, testing::npu().fingerprint());
  EXPECT_EQ(fingerprints.of(testing::host()), testing::host().fingerprint());
  // One name, one description within an instance: a changed description under the same
  // name is not hashed again (a process that changes one makes a new instance).
  Target changed = testing::npu();
  changed.clock_mhz *= 2;
  ASSERT_NE(changed.fingerprint(), first);
  EXPECT_EQ(&fingerprints.of(changed), &first);
  EXPECT_EQ(TargetFingerprints().of(changed), changed.fingerprint());
}

}  // namespace
}  // namespace pto
