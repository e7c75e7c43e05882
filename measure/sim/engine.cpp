#include "measure/sim/engine.h"

#include <algorithm>
#include <deque>
#include <functional>
#include <queue>
#include <string>
#include <tuple>
#include <utility>

#include "core/error.h"
#include "measure/sim/costed_block.h"
#include "measure/sim/trace.h"

namespace pto::sim {
namespace {

enum class EventKind : uint8_t { KernelReady, TaskDone, GmStep };

struct Event {
  double time;
  EventKind kind;
  int subject;  // kernel (KernelReady) or core
  int pipe;     // GmStep: the pipe; TaskDone: the task
  bool operator>(const Event& o) const {
    return std::tie(time, kind, subject, pipe) > std::tie(o.time, o.kind, o.subject, o.pipe);
  }
};

// One task in flight on a core.
struct TaskRun {
  int task = -1;
  const CostedBlock* plan = nullptr;
  double start = 0;
  double end = 0;                            // latest end among its steps so far
  std::array<int, kNumPipes> next{};         // position in plan->pipe_steps[pipe]
  std::array<int, kNumPipes> waiting_on{};   // step index of the SET_FLAG a pipe waits for, -1
  std::array<bool, kNumPipes> waiting_on_older{};  // a pipe waits for an older task to free UB bytes
  std::vector<double> step_end;              // per step of the block, -1 until it ran
  int pipes_left = 0;
  bool done_on(int p) const { return next[p] == static_cast<int>(plan->pipe_steps[p].size()); }
};

// A core's pipes serve its runs in order: a pipe turns to a newer run only when every
// older run is done with it.
struct Core {
  int pool = 0;
  bool used = false;
  std::deque<TaskRun> runs;                  // oldest first
  // A pipe issues in order. DMA transfers (GM steps) are pipelined: the next one may
  // issue while the previous one's data is still under way, so that its latency hides
  // behind that transfer; everything else starts once all earlier steps are done.
  std::array<double, kNumPipes> issue_at{};  // when the pipe can issue its next step
  std::array<double, kNumPipes> done_at{};   // when everything it issued has ended
  std::array<bool, kNumPipes> parked{};      // a GM step of the pipe waits in the event queue
  double retired_end = 0;                    // when the last task that left the core ended

  TaskRun* owner(int p) {
    for (TaskRun& r : runs)
      if (!r.done_on(p)) return &r;
    return nullptr;
  }
  // Tasks share a core only with tasks of their own block: only those guard the UB
  // bytes they share (CostedBlock::reuse).
  bool accepts(const CostedBlock& plan) const {
    if (runs.empty()) return true;
    return runs.front().plan == &plan && static_cast<int>(runs.size()) < plan.tasks_in_flight;
  }

  // When the UB bytes step `s` of `run` writes are free of older tasks; -1 while an
  // older task has yet to run a step that touches them.
  double reuse_free_at(const TaskRun& run, int s) const {
    const CostedBlock::Reuse& reuse = run.plan->reuse[s];
    if (reuse.after.empty()) return 0;
    const auto index = std::find_if(runs.begin(), runs.end(), [&](const TaskRun& r) { return &r == &run; }) - runs.begin();
    if (index < reuse.distance) return retired_end;  // that task has left: it freed them by its end
    const TaskRun& older = runs[index - reuse.distance];
    double free_at = 0;
    for (int step : reuse.after) {
      if (older.step_end[step] < 0) return -1;
      free_at = std::max(free_at, older.step_end[step]);
    }
    return free_at;
  }
};

struct TaskState {
  int rank = -1;      // position in the overall dispatch order
  int pending = 0;    // deps not yet done
  bool done = false;
  std::vector<int> dependents;
};

struct KernelState {
  int pending_after = 0;
  int tasks_left = 0;
  bool ready = false;
  bool started = false;
  std::vector<int> dependents;
  KernelTiming timing;
};

class Engine {
 public:
  Engine(const Program& program, const Target& target, const SimOptions& options)
      : program_(program), target_(target), memory_(program, target, options), trace_(options.trace) {
    plan_blocks();
    build_cores();
    build_graph();
  }

  EngineTotals run() {
    for (size_t k = 0; k < kernels_.size(); ++k)
      if (kernels_[k].pending_after == 0) push({double(target_.kernel_launch_cycles), EventKind::KernelReady, int(k), 0});
    while (!events_.empty()) {
      const Event e = events_.top();
      events_.pop();
      now_ = e.time;
      switch (e.kind) {
        case EventKind::KernelReady: kernel_ready(e.subject); break;
        case EventKind::TaskDone: task_done(e.subject, e.pipe); break;
        case EventKind::GmStep: gm_step(e.subject, e.pipe); break;
      }
    }
    check_all_done();
    totals_.memory = memory_.totals();
    for (const KernelState& k : kernels_) totals_.kernels.push_back(k.timing);
    return totals_;
  }

 private:
  void plan_blocks() {
    plans_.reserve(program_.blocks.size());
    for (const BlockProgram& b : program_.blocks) plans_.push_back(cost_block(b, target_));
  }

  int pool_of(CoreType type) const { return target_.split_cores && type == CoreType::AIV ? 1 : 0; }

  void build_cores() {
    totals_.pool_cores = {target_.aic_cores, target_.split_cores ? target_.aiv_cores : 0};
    for (int pool = 0; pool < kPools; ++pool) {
      pool_first_[pool] = static_cast<int>(cores_.size());
      for (int64_t i = 0; i < totals_.pool_cores[pool]; ++i) {
        cores_.push_back(Core{});
        cores_.back().pool = pool;
      }
    }
  }

  [[noreturn]] void bad_task(size_t task, const std::string& what) const {
    usage_error("program task " + std::to_string(task) + ": " + what);
  }

  void build_graph() {
    const size_t n = program_.tasks.size();
    tasks_.resize(n);
    kernels_.resize(program_.kernels.size());
    task_kernel_.assign(n, -1);
    int rank = 0;
    for (size_t k = 0; k < program_.kernels.size(); ++k) {
      const Kernel& kernel = program_.kernels[k];
      KernelState& ks = kernels_[k];
      ks.timing.kernel = static_cast<int>(k);
      ks.timing.name = kernel.name;
      ks.timing.tasks = static_cast<int64_t>(kernel.tasks.size());
      ks.tasks_left = static_cast<int>(kernel.tasks.size());
      for (int a : kernel.after) {  // ids and the graph are verified (core/program_verify.h)
        kernels_[a].dependents.push_back(static_cast<int>(k));
        ++ks.pending_after;
      }
      for (int t : kernel.tasks) {
        tasks_[t].rank = rank++;
        task_kernel_[t] = static_cast<int>(k);
      }
    }
    for (size_t t = 0; t < n; ++t) {
      const Task& task = program_.tasks[t];
      if (totals_.pool_cores[pool_of(task.core)] == 0)
        bad_task(t, std::string("target '") + target_.name + "' has no " + core_type_name(task.core) + " cores");
      for (int d : task.deps) {
        tasks_[d].dependents.push_back(static_cast<int>(t));
        ++tasks_[t].pending;
      }
    }
    totals_.tasks = static_cast<int64_t>(n);
  }

  void push(const Event& e) { events_.push(e); }

  void make_ready(int task) {
    ready_[pool_of(program_.tasks[task].core)].push({tasks_[task].rank, task});
  }

  // The ready task first in dispatch order goes to the free core with the fewest
  // tasks in flight, lowest number first; it waits while no core accepts it.
  void dispatch(int pool) {
    while (!ready_[pool].empty()) {
      const int task = ready_[pool].top().second;
      const CostedBlock& plan = plans_[program_.tasks[task].block];
      int best = -1;
      for (int c = pool_first_[pool]; c < pool_first_[pool] + totals_.pool_cores[pool]; ++c)
        if (cores_[c].accepts(plan) && (best < 0 || cores_[c].runs.size() < cores_[best].runs.size())) best = c;
      if (best < 0) return;
      ready_[pool].pop();
      start_task(best, task, now_ + target_.task_dispatch_cycles);
    }
  }

  void kernel_ready(int k) {
    KernelState& ks = kernels_[k];
    ks.ready = true;
    ks.timing.start_cycle = ks.timing.end_cycle = now_;
    if (ks.tasks_left == 0) return kernel_done(k);
    for (int t : program_.kernels[k].tasks)
      if (tasks_[t].pending == 0) make_ready(t);
    dispatch(0), dispatch(1);
  }

  void kernel_done(int k) {
    kernels_[k].timing.end_cycle = std::max(kernels_[k].timing.end_cycle, now_);
    for (int d : kernels_[k].dependents)
      if (--kernels_[d].pending_after == 0)
        push({now_ + target_.kernel_launch_cycles, EventKind::KernelReady, d, 0});
  }

  void start_task(int c, int task, double start) {
    Core& core = cores_[c];
    TaskRun& run = core.runs.emplace_back();
    run.task = task;
    run.plan = &plans_[program_.tasks[task].block];
    run.start = run.end = start;
    run.step_end.assign(run.plan->steps.size(), -1);
    run.waiting_on.fill(-1);
    KernelState& ks = kernels_[task_kernel_[task]];
    if (!ks.started) ks.started = true, ks.timing.start_cycle = start;
    if (!core.used) core.used = true, ++totals_.cores_used[core.pool];
    std::vector<int> runnable;
    for (int p = 0; p < kNumPipes; ++p)
      if (!run.done_on(p)) ++run.pipes_left, runnable.push_back(p);
    if (run.pipes_left == 0) return push({start, EventKind::TaskDone, c, task});
    run_pipes(c, runnable);
  }

  // Runs pipes ahead until each runs out of steps, waits for a SET_FLAG not yet
  // issued, or reaches a GM transfer (which must start in event order).
  void run_pipes(int c, std::vector<int>& runnable) {
    while (!runnable.empty()) {
      const int p = runnable.back();
      runnable.pop_back();
      run_pipe(c, p, runnable);
    }
  }

  void run_pipe(int c, int p, std::vector<int>& runnable) {
    Core& core = cores_[c];
    if (core.parked[p]) return;
    while (TaskRun* run = core.owner(p)) {
      const int s = run->plan->pipe_steps[p][run->next[p]];
      const PlannedStep& step = run->plan->steps[s];
      const double free_at = core.reuse_free_at(*run, s);
      if (free_at < 0) {
        run->waiting_on_older[p] = true;
        return;
      }
      double start = std::max({core.issue_at[p], run->start, free_at});
      if (step.kind == StepKind::WaitFlag) {
        const double set_end = run->step_end[step.matched_set];
        if (set_end < 0) {
          run->waiting_on[p] = step.matched_set;
          return;
        }
        start = std::max(start, set_end);
      } else if (step.kind != StepKind::Local && step.kind != StepKind::SetFlag) {
        core.parked[p] = true;
        return push({start, EventKind::GmStep, c, p});
      } else {
        start = std::max(start, core.done_at[p]);
      }
      finish_step(c, *run, p, s, start, start + step.cycles, start + step.cycles, runnable);
      if (step.kind == StepKind::SetFlag) wake_waiters(*run, s, runnable);
    }
  }

  // Busy time counts the union of the pipe's step intervals, which overlap only where
  // a transfer's latency hides behind the previous one.
  void finish_step(int c, TaskRun& run, int p, int s, double start, double end, double next_issue,
                   std::vector<int>& runnable, double l2_hit_bytes = -1) {
    Core& core = cores_[c];
    if (trace_) trace_step(c, run, s, start, end, l2_hit_bytes);
    wake_newer(core, run, runnable);
    run.step_end[s] = end;
    run.end = std::max(run.end, end);
    totals_.busy_cycles[core.pool][p] += end - std::max(start, std::min(core.done_at[p], end));
    core.issue_at[p] = next_issue;
    core.done_at[p] = std::max(core.done_at[p], end);
    ++run.next[p];
    ++totals_.instructions;
    if (run.done_on(p) && --run.pipes_left == 0) push({run.end, EventKind::TaskDone, c, run.task});
  }

  void trace_step(int c, const TaskRun& run, int s, double start, double end, double l2_hit_bytes) {
    const int pool = cores_[c].pool;
    const int block = program_.tasks[run.task].block;
    trace_->on_step({c, pool_core_type(pool), c - pool_first_[pool], run.task, &program_.blocks[block], s, start, end,
                     run.plan->steps[s].matched_set, l2_hit_bytes});
  }

  // Newer tasks' pipes that wait for UB bytes an older one holds look again.
  static void wake_newer(Core& core, const TaskRun& run, std::vector<int>& runnable) {
    bool newer = false;
    for (TaskRun& r : core.runs) {
      if (newer)
        for (int q = 0; q < kNumPipes; ++q)
          if (std::exchange(r.waiting_on_older[q], false)) runnable.push_back(q);
      newer = newer || &r == &run;
    }
  }

  static void wake_waiters(TaskRun& run, int set_step, std::vector<int>& runnable) {
    for (int q = 0; q < kNumPipes; ++q) {
      if (run.waiting_on[q] != set_step) continue;
      run.waiting_on[q] = -1;
      runnable.push_back(q);
    }
  }

  void gm_step(int c, int p) {
    Core& core = cores_[c];
    core.parked[p] = false;
    TaskRun& run = *core.owner(p);
    const int s = run.plan->pipe_steps[p][run.next[p]];
    const PlannedStep& step = run.plan->steps[s];
    const Operand& window = run.plan->gm_operands[step.gm_operand];
    const Task& task = program_.tasks[run.task];
    const double hits_before = trace_ ? memory_.l2_hit_bytes() : 0;
    const double end = memory_.transfer(now_, step, window, task.bindings[window.id]);
    const double hits = trace_ && step.kind == StepKind::GmRead ? memory_.l2_hit_bytes() - hits_before : -1;
    std::vector<int> runnable{p};
    finish_step(c, run, p, s, now_, end, std::max(now_, end - step.latency), runnable, hits);
    run_pipes(c, runnable);
  }

  void task_done(int c, int task) {
    Core& core = cores_[c];
    const auto run = std::find_if(core.runs.begin(), core.runs.end(), [&](const TaskRun& r) { return r.task == task; });
    core.retired_end = std::max(core.retired_end, run->end);
    core.runs.erase(run);
    tasks_[task].done = true;
    totals_.makespan = std::max(totals_.makespan, now_);
    for (int d : tasks_[task].dependents)
      if (--tasks_[d].pending == 0 && kernels_[task_kernel_[d]].ready) make_ready(d);
    const int k = task_kernel_[task];
    kernels_[k].timing.end_cycle = std::max(kernels_[k].timing.end_cycle, now_);
    if (--kernels_[k].tasks_left == 0) kernel_done(k);
    dispatch(0), dispatch(1);
  }

  // Without events left, every task must have run; otherwise the program deadlocks.
  void check_all_done() const {
    for (const Core& core : cores_) {
      for (const TaskRun& run : core.runs) {
        const BlockProgram& block = program_.blocks[program_.tasks[run.task].block];
        for (int p = 0; p < kNumPipes; ++p)
          if (run.waiting_on[p] >= 0)
            bad_task(run.task, "deadlock in block '" + block.name + "': pipe " + pipe_name(static_cast<Pipe>(p)) +
                                   " waits at a WAIT_FLAG whose SET_FLAG (instruction " +
                                   std::to_string(run.waiting_on[p]) + ") never issues");
      }
    }
    for (size_t t = 0; t < tasks_.size(); ++t)
      if (!tasks_[t].done) bad_task(t, "never ran: its dependencies form a cycle");
  }

  const Program& program_;
  const Target& target_;
  MemorySystem memory_;
  std::vector<CostedBlock> plans_;
  std::vector<Core> cores_;
  std::vector<TaskState> tasks_;
  std::vector<int> task_kernel_;
  std::vector<KernelState> kernels_;
  using Ranked = std::pair<int, int>;  // (dispatch rank, task)
  std::array<std::priority_queue<Ranked, std::vector<Ranked>, std::greater<>>, kPools> ready_;
  std::array<int, kPools> pool_first_{};  // index of the pool's first core
  std::priority_queue<Event, std::vector<Event>, std::greater<>> events_;
  double now_ = 0;
  EngineTotals totals_;
  TraceSink* trace_;
};

}  // namespace

EngineTotals run_engine(const Program& program, const Target& target, const SimOptions& options) {
  return Engine(program, target, options).run();
}

}  // namespace pto::sim
