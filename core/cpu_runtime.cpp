// CpuExecutor: verifies the program (core/program_verify.h), decodes it once (core/runtime/decoded_block.h), then each run
// binds the inputs and dispatches the tasks over OpenMP threads (core/runtime/scheduler.h),
// each running its block's steps on its own scratch (core/runtime/task_runner.h);
// outputs() copies the results out.
#include "core/cpu_runtime.h"

#include <omp.h>

#include "core/error.h"
#include "core/program_verify.h"
#include "core/runtime/gm_space.h"
#include "core/runtime/scheduler.h"
#include "core/runtime/task_runner.h"

namespace pto {

namespace {

const Program& verified(const Program& p) {
  verify_program(p);
  return p;
}

}  // namespace

struct CpuExecutor::Impl {
  Impl(const Program& p, ExecOptions options)
      : program(verified(p)),
        threads(options.threads > 0 ? options.threads : omp_get_max_threads()),
        gm(program),
        runner(program, gm),
        scheduler(program) {
    scratch.reserve(static_cast<size_t>(threads));
    for (int i = 0; i < threads; ++i) scratch.emplace_back(runner.arena_bytes(), runner.max_buffers());
  }

  const Program program;  // a copy: the runner and scheduler refer into it
  const int threads;
  runtime::GmSpace gm;
  runtime::TaskRunner runner;
  runtime::TaskScheduler scheduler;
  std::vector<runtime::Scratch> scratch;  // one per thread
  bool executed = false;                  // outputs() reads what a run wrote
};

CpuExecutor::CpuExecutor(const Program& program, ExecOptions options)
    : impl_(std::make_unique<Impl>(program, options)) {}

CpuExecutor::~CpuExecutor() = default;

void CpuExecutor::execute(const std::vector<HostTensor>& inputs) {
  Impl& im = *impl_;
  im.executed = false;  // a run that throws leaves no outputs to read
  im.gm.bind_inputs(inputs);
  im.scheduler.run(im.threads, [&im](int task, int thread) { im.runner.run(task, im.scratch[thread]); });
  im.executed = true;
}

std::vector<HostTensor> CpuExecutor::outputs() const {
  if (!impl_->executed) usage_error("outputs: the program has not run yet; call execute() first");
  return impl_->gm.collect_outputs();
}

std::vector<HostTensor> CpuExecutor::run(const std::vector<HostTensor>& inputs) {
  execute(inputs);
  return outputs();
}

}  // namespace pto
