// Target: a hardware description the compiler, cost model and simulator all read.
//
// Ascend targets are JSON files in core/targets/ built from public platform data
// (shared/ascend-facts.md); `host` is detected on this machine (sysfs caches, core
// count, SIMD width). Capacities are hard on NPUs (a config that overflows is
// infeasible) and soft on the host (overflow costs a spill penalty). The fingerprint
// is a hash of the canonical JSON, so a changed description never matches old records.
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "core/dtype.h"

namespace pto {

// MIX: a task that runs on a cluster, an AIC and the AIVs paired with it (program.h).
enum class CoreType { AIC, AIV, MIX };
const char* core_type_name(CoreType t);

// What a target is: an Ascend NPU (simulated, or measured on a device) or this
// machine's CPU (measured by the CPU runtime). JSON: "npu" / "cpu".
enum class TargetKind { Npu, Cpu };
const char* target_kind_name(TargetKind k);  // "npu", "cpu"

// Fractal (Cube) block sizes for one input dtype: one fractal MAC per cycle per AIC.
struct Fractal {
  int m = 16, k = 16, n = 16;
};

// One entry of the vector latency/parallelism table (ascend-facts.md, "Vector unit").
struct VectorCost {
  int latency = 10;         // cycles
  int parallelism = 128;    // elements per cycle
};

struct Target {
  std::string name;              // "ascend910b1", "host"
  TargetKind kind = TargetKind::Npu;
  std::string notes, source;     // free text: caveats, where the figures come from
  bool hard_capacity = true;     // NPU: overflow is infeasible; CPU: spill penalty
  int aic_cores = 0;             // Cube cores (CPU: cores)
  int aiv_cores = 0;             // Vector cores (CPU: cores)
  bool split_cores = true;       // AIC and AIV are separate cores (910B); CPU: false
  // The Cube's L0C can write the Vector cores' UB (FIX) and their UB the Cube's L1 (MTE3):
  // PyPTO's platform configs list Intrinsic_fix_pipe_l0c2ub and data_move_ub2l1 for the
  // 950, not for A2/A3 (framework/src/platform/parser/simulation_platform/platform_config/
  // *.ini), where tiles go through GM instead. CPU: true (one memory).
  bool cv_direct = false;
  double clock_mhz = 0;

  // A kernel may hold Cube and Vector work together (a matmul with its epilogue): PyPTO's
  // sg_set_scope takes a Cube+Vector scope on the 950 only, "不支持CV混合场景的scope配置" on
  // A2/A3 (docs/zh/api/config/pypto-set_pass_options.md). Those are the targets whose
  // cores hand tiles over directly; the CPU, one memory, fuses freely.
  bool cv_fusion() const { return cv_direct; }

  // Buffer capacities in bytes (CPU: UB ~ L1d, L1 ~ L2, L0* ~ register/L1d budget).
  int64_t ub = 0, l1 = 0, l0a = 0, l0b = 0, l0c = 0, bt = 0, fixbuf = 0;
  int64_t l2_bytes = 0;          // shared L2 (CPU: last-level cache)
  // Global memory (HBM) in bytes; 0 = not known. It decides only whether a workload's
  // tensors fit (core/global_memory.h), never a tile's time, so it is not part of the
  // fingerprint: records of a target stay fresh when its HBM size is filled in.
  int64_t hbm_bytes = 0;
  int align_bytes = 32;          // tile last-axis alignment for UB/L1 operands
  std::map<DType, Fractal> fractal;

  // Per-core rates in bytes/cycle.
  double gm_read_bpc = 32, l2_read_bpc = 110, l2_write_bpc = 86;
  double l1_to_l0a_bpc = 512, l1_to_l0b_bpc = 256, l1_to_ub_bpc = 128;
  double l0c_to_ub_bpc = 256, ub_to_gm_bpc = 64, ub_to_l1_bpc = 128;
  // A GM transfer moves whole DMA bursts: each contiguous run of it costs the core at
  // least this many bytes at its L2-hit rate, so short rows are slower per byte. 0 = off.
  int64_t gm_min_burst_bytes = 0;
  // Shared bandwidths in GB/s.
  double hbm_gbps = 0, l2_gbps = 0;

  // Latencies in cycles.
  int gm_read_latency = 320, gm_write_latency = 180;
  int ub_copy_latency = 50, l1_copy_latency = 200, sync_latency = 1, vector_barrier = 18;
  // A flag set on one core of a cluster and waited for on another (the Cube and vector
  // units of a split-core chip: CrossCoreSetFlag / CrossCoreWaitFlag) reaches the waiter
  // this much after its SET.
  int cross_core_sync_latency = 0;
  int l1_to_l0_latency = 0;      // per L1 -> L0A/L0B move (load_data_perf measures 28)
  int kernel_launch_cycles = 0;  // fixed cost of one kernel launch
  int task_dispatch_cycles = 0;  // fixed cost of starting one task on a core

  // Keyed by op name ("add", "exp", ...), or "op:dtype" ("sum:fp32") for a dtype's own
  // figures, and "default" for ops without an entry.
  std::map<std::string, VectorCost> vector_costs;
  // The "op:dtype" entry, else "op", else "default", else VectorCost{}.
  VectorCost vector_cost(const std::string& op, DType dtype) const;

  // CPU only: FMA throughput, in flops/cycle/core for fp32, and SIMD width in bytes.
  double cpu_flops_per_cycle = 0;
  int simd_bytes = 0;

  double cube_flops_per_cycle(DType input) const;  // 2 * m*k*n of the fractal
  // Cores of a type; MIX: clusters, one per AIC.
  int64_t cores(CoreType t) const { return t == CoreType::AIV ? aiv_cores : aic_cores; }
  // Vector units in a cluster: the AIVs per AIC on split-core targets, else the core itself.
  int vector_units() const { return split_cores ? std::max(1, aiv_cores / std::max(1, aic_cores)) : 1; }

  nlohmann::json to_json() const;
  std::string fingerprint() const;  // 16 hex digits of a hash of the canonical JSON (notes/source excluded)
  // Usage Error naming the field for malformed input.
  static Target from_json(const nlohmann::json& j);
};

std::vector<std::string> builtin_target_names();   // the JSON files + "host"
// A built-in name, or a path to a JSON file of the user's own. Usage Error listing
// the known names when neither.
Target load_target(const std::string& name_or_path);

// Where host detection reads from; tests point it at a fake tree. Missing files fall
// back to documented defaults.
struct HostSources {
  std::string cache_dir = "/sys/devices/system/cpu/cpu0/cache";
  std::string max_freq_khz = "/sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq";
  std::string cpuinfo = "/proc/cpuinfo";
  // Where cache_dir names no L1d or L2: ask the CPU (sysconf, CPUID on x86) first.
  bool ask_the_cpu = true;
};
Target detect_host_target(const HostSources& sources = {});

// A host of fixed, documented figures (the fallbacks above, 8 cores, 2 GHz) with a
// SIMD width of `simd_bytes` (32: AVX2, 64: AVX-512): the same Target on every machine
// and build, for what must not depend on where it runs (the derived versions,
// core/compiler_fingerprint.h).
Target reference_host_target(int simd_bytes);

}  // namespace pto
