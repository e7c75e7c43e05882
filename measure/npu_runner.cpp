// The `npu` backend without a measure command: where a real Ascend NPU would plug in
// through CANN (the Ascend toolkit's runtime: load the kernel, launch it on a device,
// time it with device events). This build has none, so asking for it says what it
// needs instead of pretending, and how to measure on an NPU of one's own: through a
// measure command (measure/command_runner.cpp, examples/npu/measure_pypto.py).
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
              " or 'model' (the cost model's prediction). To measure on an Ascend NPU of your own through "
              "PyPTO and torch_npu, give --measure-cmd 'python3 examples/npu/measure_pypto.py --kernel "
              "my_kernel.py' (docs/measure_protocol.md).");
}

}  // namespace pto::measure
