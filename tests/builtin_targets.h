// The built-in targets the tests run on, each loaded once per test program: ascend910b1
// (the NPU every simulated and modelled test uses), ascend950pr (the NPU whose kernels
// may fuse a matmul with vector work) and host (this machine, for the CPU runtime). One copy, so that every test file means the same target by npu().
#pragma once

#include "core/target.h"

namespace pto::testing {

inline const Target& npu() {
  static const Target t = load_target("ascend910b1");
  return t;
}

inline const Target& cv_npu() {
  static const Target t = load_target("ascend950pr");
  return t;
}

inline const Target& host() {
  static const Target t = load_target("host");
  return t;
}

}  // namespace pto::testing
