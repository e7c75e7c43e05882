// MemorySystem: GM as the cores see it. Every storage-owning GM tensor gets a byte
// address; a transfer walks the lines its window really touches (views through their
// strides) through the shared L2, then pays for its bytes three ways: the core's own
// rate (L2 hits and HBM fills at different per-core rates, and at least one DMA burst,
// the target's gm_min_burst_bytes, per contiguous run at the hit rate), the L2
// bandwidth shared by all cores, and the HBM bandwidth shared by all cores for fills and
// write-backs.
// Transfers must be issued in time order (the engine's event queue guarantees it).
#pragma once

#include <cstdint>
#include <vector>

#include "core/program.h"
#include "core/target.h"
#include "measure/sim/bandwidth_queue.h"
#include "measure/sim/costed_block.h"
#include "measure/sim/l2_cache.h"
#include "measure/sim/simulator.h"

namespace pto::sim {

struct MemoryTotals {
  double gm_read_bytes = 0;
  double gm_write_bytes = 0;
  double l2_hit_bytes = 0;   // read bytes found in L2 already filled
  double hbm_read_bytes = 0;
  double hbm_write_bytes = 0;
  double hbm_busy_cycles = 0;
  double l2_busy_cycles = 0;
  double workspace_bytes = 0;  // MIX tasks' hand-offs through their cluster's workspace
};

class MemorySystem {
 public:
  MemorySystem(const Program& program, const Target& target, const SimOptions& options);

  // Times the GM transfer `step` of one core, starting at `start`, on the window
  // `window` of the task's binding; returns when it ends.
  double transfer(double start, const PlannedStep& step, const Operand& window, const TensorBinding& binding);
  // Times a Workspace step: the L2 bandwidth and the core's rate, no lines, no HBM.
  double workspace_transfer(double start, const PlannedStep& step);

  MemoryTotals totals() const;
  // Read bytes found in L2 so far: cheap (totals() scans the L2), for the trace's per-load hits.
  double l2_hit_bytes() const { return totals_.l2_hit_bytes; }

 private:
  struct Placement {        // where a tensor's elements live
    int64_t base = 0;       // byte address of its storage owner
    int64_t elem_offset = 0;
    Shape strides;
    int elem_bytes = 1;
  };
  struct LineTally {        // what one transfer found in the L2
    double bytes = 0;
    double burst_bytes = 0;     // what the core's DMA moves: each run rounded up to a burst
    double hit_bytes = 0;       // in lines already filled
    double inflight_bytes = 0;  // in lines whose fill is still under way
    double miss_lines = 0;      // lines to fetch from HBM
    double written_back = 0;    // dirty lines that go to HBM
    double ready = 0;           // when the last in-flight line arrives
  };

  template <class Visit>
  void for_each_run(const Placement& p, const Operand& window, const Shape& origin, Visit&& visit) const;
  double burst_floor_cycles(const LineTally& t, const PlannedStep& step) const;
  LineTally touch_lines(const Placement& p, const Operand& window, const Shape& origin, double start, bool write,
                        bool fetch);

  std::vector<Placement> placement_;  // by GmTensor id
  L2Cache l2_;
  double min_burst_bytes_;
  BandwidthQueue hbm_, l2_bandwidth_;
  std::vector<int32_t> filled_;       // slots filled by the current transfer
  MemoryTotals totals_;
};

}  // namespace pto::sim
