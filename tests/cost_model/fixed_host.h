// A CPU description for host model tests that does not depend on this machine.
#pragma once

#include "core/target.h"

namespace pto::testing {

// An AVX-512 host with 48 KiB L1d, 1 MiB L2, 32 MiB LLC at 2.6 GHz. Every field the
// model reads is set here, none detected: this machine's SIMD width, clock and cores
// change the vector costs and rates that detect_host_target() derives from them, and
// the tests must not. The vector table is an AVX2 core's (16 fp32 lanes a cycle), the
// machine the model's pass prices were measured on.
inline Target fixed_host(int threads = 1) {
  Target t = load_target("host");
  t.aic_cores = t.aiv_cores = threads;
  t.clock_mhz = 2600;
  t.simd_bytes = t.align_bytes = 64;
  t.cpu_flops_per_cycle = 64;
  t.ub = t.l0c = t.bt = t.fixbuf = 48 * 1024;
  t.l0a = t.l0b = 24 * 1024;
  t.l1 = 1024 * 1024;
  t.l2_bytes = 32 * 1024 * 1024;
  t.gm_read_bpc = t.ub_to_gm_bpc = 8;
  t.l2_read_bpc = 32;
  t.l2_write_bpc = 16;
  t.l1_to_l0a_bpc = t.l1_to_l0b_bpc = t.l1_to_ub_bpc = 64;
  t.ub_to_l1_bpc = 32;
  t.l0c_to_ub_bpc = 128;
  t.hbm_gbps = 40;
  t.l2_gbps = 166.4;
  t.gm_read_latency = t.gm_write_latency = 260;
  t.kernel_launch_cycles = 5200;
  t.task_dispatch_cycles = 200;
  t.vector_costs = {{"default", {4, 16}}};
  for (const char* op : {"div", "sqrt", "rsqrt"}) t.vector_costs[op] = {12, 4};
  for (const char* op : {"exp", "log", "tanh", "erf", "erfc"}) t.vector_costs[op] = {20, 2};
  return t;
}

}  // namespace pto::testing
