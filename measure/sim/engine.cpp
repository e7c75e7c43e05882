#include "measure/sim/engine.h"

#include <algorithm>
#include <deque>
#include <functional>
#include <list>
#include <queue>
#include <string>
#include <tuple>
#include <unordered_map>
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

// One task in flight: on one core, or a MIX task on a cluster's cores, one per unit.
// Its steps are kept per lane (unit, pipe).
struct TaskRun {
  int task = -1;
  const CostedBlock* plan = nullptr;
  std::array<int, kMaxUnits> cores{};        // the core running each unit
  double start = 0;
  double end = 0;                            // latest end among its steps so far
  std::array<int, kMaxLanes> next{};         // position in plan->pipe_steps[lane]
  std::array<int, kMaxLanes> waiting_on{};   // step index of the SET_FLAG a lane waits for, -1
  std::array<bool, kMaxLanes> waiting_on_older{};  // a lane waits for an older task to free UB bytes
  std::vector<double> step_end;              // per step of the block, -1 until it ran
  int lanes_left = 0;
  bool done_on(int lane) const { return next[lane] == static_cast<int>(plan->pipe_steps[lane].size()); }
  // The lane of `pipe` on core `c`, which runs one of its units.
  int lane(int c, int pipe) const {
    for (int u = 0; u < plan->units; ++u)
      if (cores[u] == c) return u * kNumPipes + pipe;
    return pipe;
  }
};

// A pipe to look at again: (core, pipe).
using PipeRef = std::pair<int, int>;

// A core's pipes serve its runs in order: a pipe turns to a newer run only when every
// older run is done with it.
struct Core {
  int pool = 0;
  bool used = false;
  std::deque<TaskRun*> runs;                 // oldest first
  // A pipe issues in order. DMA transfers (GM steps) are pipelined: the next one may
  // issue while the previous one's data is still under way, so that its latency hides
  // behind that transfer; everything else starts once all earlier steps are done.
  std::array<double, kNumPipes> issue_at{};  // when the pipe can issue its next step
  std::array<double, kNumPipes> done_at{};   // when everything it issued has ended
  std::array<bool, kNumPipes> parked{};      // a GM step of the pipe waits in the event queue
  double retired_end = 0;                    // when the last task that left the core ended

  // The run a pipe serves now, and its lane there.
  std::pair<TaskRun*, int> owner(int self, int p) {
    for (TaskRun* r : runs) {
      const int lane = r->lane(self, p);
      if (!r->done_on(lane)) return {r, lane};
    }
    return {nullptr, -1};
  }
  // Tasks share a core only with tasks of their own block: only those guard the UB
  // bytes they share (CostedBlock::reuse).
  bool accepts(const CostedBlock& plan) const {
    if (runs.empty()) return true;
    return runs.front()->plan == &plan && static_cast<int>(runs.size()) < plan.tasks_in_flight;
  }

  // When the UB bytes step `s` of `run` writes are free of older tasks; -1 while an
  // older task has yet to run a step that touches them.
  double reuse_free_at(const TaskRun& run, int s) const {
    const CostedBlock::Reuse& reuse = run.plan->reuse[s];
    if (reuse.after.empty()) return 0;
    const auto index = std::find(runs.begin(), runs.end(), &run) - runs.begin();
    if (index < reuse.distance) return retired_end;  // that task has left: it freed them by its end
    const TaskRun& older = *runs[index - reuse.distance];
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

// Ready queues: AIC, AIV (split targets) and MIX tasks.
constexpr int kQueues = 3;

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
        case EventKind::TaskDone: task_done(e.pipe); break;
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
  int queue_of(CoreType type) const { return type == CoreType::MIX ? 2 : pool_of(type); }

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

  // Cluster i: AIC i and, on split targets, the AIVs that pair with it.
  std::array<int, kMaxUnits> cluster(int i, int units) const {
    std::array<int, kMaxUnits> cores{};
    cores[0] = pool_first_[0] + i;
    for (int u = 1; u < units; ++u)
      cores[u] = target_.split_cores ? pool_first_[1] + i * target_.vector_units() + (u - 1) : cores[0];
    return cores;
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
      const int units = plans_[task.block].units;
      if (task.core == CoreType::MIX && target_.split_cores && units > 1 + target_.vector_units())
        bad_task(t, "its block runs " + std::to_string(units) + " units; a cluster of '" + target_.name + "' has " +
                        std::to_string(1 + target_.vector_units()));
      for (int d : task.deps) {
        tasks_[d].dependents.push_back(static_cast<int>(t));
        ++tasks_[t].pending;
      }
    }
    totals_.tasks = static_cast<int64_t>(n);
  }

  void push(const Event& e) { events_.push(e); }

  void make_ready(int task) {
    ready_[queue_of(program_.tasks[task].core)].push({tasks_[task].rank, task});
  }

  // The ready task first in dispatch order goes to the free core with the fewest
  // tasks in flight, lowest number first (a MIX task: to the lowest cluster whose cores
  // are all free); it waits while none accepts it.
  void dispatch(int queue) {
    while (!ready_[queue].empty()) {
      const int task = ready_[queue].top().second;
      const CostedBlock& plan = plans_[program_.tasks[task].block];
      std::array<int, kMaxUnits> cores{};
      bool found = false;
      if (queue == 2) {
        for (int i = 0; i < target_.aic_cores && !found; ++i) {
          cores = cluster(i, plan.units);
          found = true;
          for (int u = 0; u < plan.units; ++u) found = found && cores_[cores[u]].runs.empty();
        }
      } else {
        const int pool = queue;
        int best = -1;
        for (int c = pool_first_[pool]; c < pool_first_[pool] + totals_.pool_cores[pool]; ++c)
          if (cores_[c].accepts(plan) && (best < 0 || cores_[c].runs.size() < cores_[best].runs.size())) best = c;
        cores[0] = best;
        found = best >= 0;
      }
      if (!found) return;
      ready_[queue].pop();
      start_task(cores, task, now_ + target_.task_dispatch_cycles);
    }
  }

  void dispatch_all() {
    for (int q = 0; q < kQueues; ++q) dispatch(q);
  }

  void kernel_ready(int k) {
    KernelState& ks = kernels_[k];
    ks.ready = true;
    ks.timing.start_cycle = ks.timing.end_cycle = now_;
    if (ks.tasks_left == 0) return kernel_done(k);
    for (int t : program_.kernels[k].tasks)
      if (tasks_[t].pending == 0) make_ready(t);
    dispatch_all();
  }

  void kernel_done(int k) {
    kernels_[k].timing.end_cycle = std::max(kernels_[k].timing.end_cycle, now_);
    for (int d : kernels_[k].dependents)
      if (--kernels_[d].pending_after == 0)
        push({now_ + target_.kernel_launch_cycles, EventKind::KernelReady, d, 0});
  }

  void start_task(const std::array<int, kMaxUnits>& cores, int task, double start) {
    TaskRun& run = live_.emplace_back();
    run.task = task;
    run.plan = &plans_[program_.tasks[task].block];
    run.cores = cores;
    run.start = run.end = start;
    run.step_end.assign(run.plan->steps.size(), -1);
    run.waiting_on.fill(-1);
    run_of_[task] = &run;
    KernelState& ks = kernels_[task_kernel_[task]];
    if (!ks.started) ks.started = true, ks.timing.start_cycle = start;
    for (int u = 0; u < run.plan->units; ++u) {
      Core& core = cores_[cores[u]];
      if (std::find(core.runs.begin(), core.runs.end(), &run) != core.runs.end()) continue;  // units on one core
      core.runs.push_back(&run);
      if (!core.used) core.used = true, ++totals_.cores_used[core.pool];
    }
    std::vector<PipeRef> runnable;
    for (int lane = 0; lane < run.plan->units * kNumPipes; ++lane)
      if (!run.done_on(lane)) ++run.lanes_left, runnable.push_back({cores[lane / kNumPipes], lane % kNumPipes});
    if (run.lanes_left == 0) return push({start, EventKind::TaskDone, cores[0], task});
    run_pipes(runnable);
  }

  // Runs pipes ahead until each runs out of steps, waits for a SET_FLAG not yet
  // issued, or reaches a GM transfer (which must start in event order).
  void run_pipes(std::vector<PipeRef>& runnable) {
    while (!runnable.empty()) {
      const auto [c, p] = runnable.back();
      runnable.pop_back();
      run_pipe(c, p, runnable);
    }
  }

  void run_pipe(int c, int p, std::vector<PipeRef>& runnable) {
    Core& core = cores_[c];
    if (core.parked[p]) return;
    for (auto [run, lane] = core.owner(c, p); run; std::tie(run, lane) = core.owner(c, p)) {
      const int s = run->plan->pipe_steps[lane][run->next[lane]];
      const PlannedStep& step = run->plan->steps[s];
      const double free_at = core.reuse_free_at(*run, s);
      if (free_at < 0) {
        run->waiting_on_older[lane] = true;
        return;
      }
      double start = std::max({core.issue_at[p], run->start, free_at});
      if (step.kind == StepKind::WaitFlag) {
        const double set_end = run->step_end[step.matched_set];
        if (set_end < 0) {
          run->waiting_on[lane] = step.matched_set;
          return;
        }
        start = std::max(start, set_end + step.latency);
      } else if (step.kind != StepKind::Local && step.kind != StepKind::SetFlag) {
        core.parked[p] = true;
        return push({start, EventKind::GmStep, c, p});
      } else {
        start = std::max(start, core.done_at[p]);
      }
      finish_step(c, *run, lane, s, start, start + step.cycles, start + step.cycles, runnable);
      if (step.kind == StepKind::SetFlag) wake_waiters(*run, s, runnable);
    }
  }

  // Busy time counts the union of the pipe's step intervals, which overlap only where
  // a transfer's latency hides behind the previous one.
  void finish_step(int c, TaskRun& run, int lane, int s, double start, double end, double next_issue,
                   std::vector<PipeRef>& runnable, double l2_hit_bytes = -1) {
    Core& core = cores_[c];
    const int p = lane % kNumPipes;
    if (trace_) trace_step(c, run, s, start, end, l2_hit_bytes);
    wake_newer(c, run, runnable);
    run.step_end[s] = end;
    run.end = std::max(run.end, end);
    totals_.busy_cycles[core.pool][p] += end - std::max(start, std::min(core.done_at[p], end));
    core.issue_at[p] = next_issue;
    core.done_at[p] = std::max(core.done_at[p], end);
    ++run.next[lane];
    ++totals_.instructions;
    if (run.done_on(lane) && --run.lanes_left == 0) push({run.end, EventKind::TaskDone, run.cores[0], run.task});
  }

  void trace_step(int c, const TaskRun& run, int s, double start, double end, double l2_hit_bytes) {
    const int pool = cores_[c].pool;
    const int block = program_.tasks[run.task].block;
    trace_->on_step({c, pool_core_type(pool), c - pool_first_[pool], run.task, &program_.blocks[block], s, start, end,
                     run.plan->steps[s].matched_set, l2_hit_bytes});
  }

  // Newer tasks' pipes that wait for UB bytes an older one holds look again.
  void wake_newer(int c, const TaskRun& run, std::vector<PipeRef>& runnable) {
    bool newer = false;
    for (TaskRun* r : cores_[c].runs) {
      if (newer)
        for (int q = 0; q < kNumPipes; ++q) {
          const int lane = r->lane(c, q);
          if (std::exchange(r->waiting_on_older[lane], false)) runnable.push_back({c, q});
        }
      newer = newer || r == &run;
    }
  }

  static void wake_waiters(TaskRun& run, int set_step, std::vector<PipeRef>& runnable) {
    for (int lane = 0; lane < run.plan->units * kNumPipes; ++lane) {
      if (run.waiting_on[lane] != set_step) continue;
      run.waiting_on[lane] = -1;
      runnable.push_back({run.cores[lane / kNumPipes], lane % kNumPipes});
    }
  }

  void gm_step(int c, int p) {
    Core& core = cores_[c];
    core.parked[p] = false;
    auto [run, lane] = core.owner(c, p);
    const int s = run->plan->pipe_steps[lane][run->next[lane]];
    const PlannedStep& step = run->plan->steps[s];
    std::vector<PipeRef> runnable{{c, p}};
    if (step.kind == StepKind::Workspace) {
      const double end = memory_.workspace_transfer(now_, step);
      finish_step(c, *run, lane, s, now_, end, std::max(now_, end - step.latency), runnable);
      return run_pipes(runnable);
    }
    const Operand& window = run->plan->gm_operands[step.gm_operand];
    const Task& task = program_.tasks[run->task];
    const double hits_before = trace_ ? memory_.l2_hit_bytes() : 0;
    const double end = memory_.transfer(now_, step, window, task.bindings[window.id]);
    const double hits = trace_ && step.kind == StepKind::GmRead ? memory_.l2_hit_bytes() - hits_before : -1;
    finish_step(c, *run, lane, s, now_, end, std::max(now_, end - step.latency), runnable, hits);
    run_pipes(runnable);
  }

  void task_done(int task) {
    TaskRun* run = run_of_.at(task);
    for (int u = 0; u < run->plan->units; ++u) {
      Core& core = cores_[run->cores[u]];
      const auto it = std::find(core.runs.begin(), core.runs.end(), run);
      if (it == core.runs.end()) continue;
      core.retired_end = std::max(core.retired_end, run->end);
      core.runs.erase(it);
    }
    run_of_.erase(task);
    live_.remove_if([&](const TaskRun& r) { return &r == run; });
    tasks_[task].done = true;
    totals_.makespan = std::max(totals_.makespan, now_);
    for (int d : tasks_[task].dependents)
      if (--tasks_[d].pending == 0 && kernels_[task_kernel_[d]].ready) make_ready(d);
    const int k = task_kernel_[task];
    kernels_[k].timing.end_cycle = std::max(kernels_[k].timing.end_cycle, now_);
    if (--kernels_[k].tasks_left == 0) kernel_done(k);
    dispatch_all();
  }

  // Without events left, every task must have run; otherwise the program deadlocks.
  void check_all_done() const {
    for (const TaskRun& run : live_) {
      const BlockProgram& block = program_.blocks[program_.tasks[run.task].block];
      for (int lane = 0; lane < run.plan->units * kNumPipes; ++lane)
        if (run.waiting_on[lane] >= 0)
          bad_task(run.task, "deadlock in block '" + block.name + "': pipe " +
                                 pipe_name(static_cast<Pipe>(lane % kNumPipes)) + " of unit " +
                                 std::to_string(lane / kNumPipes) + " waits at a WAIT_FLAG whose SET_FLAG (instruction " +
                                 std::to_string(run.waiting_on[lane]) + ") never issues");
    }
    for (size_t t = 0; t < tasks_.size(); ++t)
      if (!tasks_[t].done) bad_task(t, "never ran: its dependencies form a cycle");
  }

  const Program& program_;
  const Target& target_;
  MemorySystem memory_;
  std::vector<CostedBlock> plans_;
  std::vector<Core> cores_;
  std::list<TaskRun> live_;                  // tasks in flight (stable addresses)
  std::unordered_map<int, TaskRun*> run_of_;
  std::vector<TaskState> tasks_;
  std::vector<int> task_kernel_;
  std::vector<KernelState> kernels_;
  using Ranked = std::pair<int, int>;  // (dispatch rank, task)
  std::array<std::priority_queue<Ranked, std::vector<Ranked>, std::greater<>>, kQueues> ready_;
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
