// The `npu` backend: where a real Ascend NPU would plug in through CANN (the Ascend
// toolkit's runtime: load the kernel, launch it on a device, time it with device
// events). This build has none, so asking for it says what it needs instead of
// pretending.
#include <cstdlib>
#include <string>

#include "core/error.h"
#include "measure/backends.h"

namespace pto::measure {

std::unique_ptr<Runner> make_npu_runner(const Target& npu, const RunnerOptions& /*options*/) {
  const char* ascend_home = std::getenv("ASCEND_HOME_PATH");
  std::string toolkit = ascend_home && *ascend_home
                            ? std::string("ASCEND_HOME_PATH is set (") + ascend_home +
                                  "), but this binary was not built against it"
                            : "ASCEND_HOME_PATH is not set";
  usage_error("backend 'npu' measures on a real Ascend NPU through CANN: it needs the Ascend "
              "toolkit (CANN, found through ASCEND_HOME_PATH), its runtime libraries and a "
              "visible NPU device. This build of pto-tune has no NPU backend (" + toolkit +
              "). For target '" + npu.name + "' use " +
              (npu.kind == TargetKind::Npu ? "backend 'sim' (simulated time)" : "backend 'cpu' (real time on this machine)") +
              " or 'model' (the cost model's prediction).");
}

}  // namespace pto::measure
