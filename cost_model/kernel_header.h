// The header fields of a KernelEstimate — which kernel, its tasks, waves, split-K, L2
// hits, bytes and time — filled the same way by the NPU composition (estimate.cpp) and
// the host model (host_model.cpp); each then fills the breakdown in its own terms.
#pragma once

#include <algorithm>
#include <cstdint>

#include "core/analyze.h"
#include "cost_model/estimate.h"
#include "cost_model/l2_traffic.h"

namespace pto {

// `tasks` tasks of the kernel's main core type run on `width` cores of it, in waves.
inline void fill_kernel_header(KernelEstimate& e, const KernelSummary& k, const Traffic& traffic, int64_t tasks,
                               int64_t width, double time) {
  tasks = std::max<int64_t>(tasks, 1);
  e.kernel = k.kernel;
  e.uses_cube = k.uses_cube;
  e.mix = k.mix_tasks > 0;
  e.aic_tasks = e.mix ? k.mix_tasks : k.aic_tasks;
  e.aiv_tasks = e.mix ? k.mix_tasks : k.aiv_tasks;
  e.wave_width = width;
  e.waves = ceil_div(tasks, width);
  e.last_wave_tasks = tasks - (e.waves - 1) * width;
  e.idle_fraction = 1.0 - static_cast<double>(tasks) / static_cast<double>(e.waves * width);
  e.split_k = k.split_k;
  e.l0_slots = k.uses_cube && !e.mix ? k.l0_slots : 0;
  e.l2_hit_ratio = traffic.hit;
  e.mte2_bytes = k.gm_read_bytes;
  e.hbm_bytes = traffic.hbm_bytes;
  e.time_ns = time;
}

}  // namespace pto
