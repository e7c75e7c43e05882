// detect_host_target(): the `host` Target, read from this machine.
//
// The CPU runtime maps the Ascend memory hierarchy onto caches (UB ~ L1d, L1 ~ L2,
// the shared L2 ~ the last-level cache), so capacities come from sysfs, or where a VM
// has none, L1d and L2 from the CPU (CPUID, through sysconf). Core count,
// SIMD width and clock are detected too; bandwidths, latencies and vector costs are
// rough estimates scaled by those (the cost model calibrates against measurements).
// The result must be stable from run to run on one machine, since its fingerprint
// keys the tuning records: the clock is the cpufreq maximum, or "cpu MHz" rounded to
// 100 MHz, never the instantaneous frequency.
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <thread>

#include "core/target.h"

namespace pto {

namespace {

// Fallbacks when sysfs or procfs says nothing (containers, other OSes).
constexpr int64_t kDefaultL1d = 32 * 1024;
constexpr int64_t kDefaultL2 = 1024 * 1024;
constexpr int64_t kDefaultLlc = 8 * 1024 * 1024;
constexpr double kDefaultClockMhz = 2000;
constexpr int kReferenceHostCores = 8;

// Rough figures for a server-class core, documented in the target's notes.
constexpr double kDramGbpsPerCore = 20;
constexpr double kDramGbpsMax = 200;
constexpr double kDramLatencyNs = 100;
constexpr double kParallelRegionNs = 2000;  // an OpenMP fork/join

#if defined(__AVX512F__)
constexpr int kHostSimdBytes = 64;
#elif defined(__AVX2__)
constexpr int kHostSimdBytes = 32;
#else
constexpr int kHostSimdBytes = 16;
#endif

std::optional<std::string> read_first_line(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::string line;
  if (!in || !std::getline(in, line)) return std::nullopt;
  return line;
}

// "48K", "1024K", "32M" (sysfs cache sizes) -> bytes; nullopt when unreadable.
std::optional<int64_t> parse_cache_size(const std::string& text) {
  size_t used = 0;
  int64_t value = 0;
  try {
    value = std::stoll(text, &used);
  } catch (const std::exception&) {
    return std::nullopt;
  }
  const std::string suffix = text.substr(used);
  const int64_t unit = suffix.starts_with("K") ? 1024 : suffix.starts_with("M") ? 1024 * 1024
                     : suffix.starts_with("G") ? 1024LL * 1024 * 1024 : 1;
  if (value <= 0) return std::nullopt;
  return value * unit;
}

struct Caches {
  int64_t l1d = kDefaultL1d;
  int64_t l2 = kDefaultL2;
  int64_t llc = kDefaultLlc;
};

// A cache size the C library reads from the CPU itself (CPUID on x86), for machines
// whose sysfs has no cache directory (some VMs). nullopt when it does not know.
std::optional<int64_t> cpu_reported_size(int sysconf_name) {
  const long bytes = sysconf(sysconf_name);
  if (bytes <= 0) return std::nullopt;
  return bytes;
}

// L1d and L2 from sysfs, else from the CPU; the last level from sysfs only: a VM's
// CPUID can describe the host's whole package (one reported a 508 MiB L3), which would
// price every working set as a cache hit.
Caches detect_caches(const std::string& cache_dir, bool ask_the_cpu) {
  Caches caches;
  std::optional<int64_t> l1d, l2;
  int llc_level = 0;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(cache_dir, ec)) {
    if (!entry.path().filename().string().starts_with("index")) continue;
    const auto level = read_first_line(entry.path() / "level");
    const auto type = read_first_line(entry.path() / "type");
    const auto size_text = read_first_line(entry.path() / "size");
    if (!level || !type || !size_text || *type == "Instruction") continue;
    const auto size = parse_cache_size(*size_text);
    const int lvl = std::atoi(level->c_str());
    if (!size || lvl <= 0) continue;
    if (lvl == 1) l1d = *size;
    if (lvl == 2) l2 = *size;
    if (lvl > llc_level) {
      llc_level = lvl;
      caches.llc = *size;
    }
  }
  if (ask_the_cpu && !l1d) l1d = cpu_reported_size(_SC_LEVEL1_DCACHE_SIZE);
  if (ask_the_cpu && !l2) l2 = cpu_reported_size(_SC_LEVEL2_CACHE_SIZE);
  if (l1d) caches.l1d = *l1d;
  if (l2) caches.l2 = *l2;
  if (llc_level < 2) caches.llc = std::max(caches.l2, kDefaultLlc);
  return caches;
}

int detect_cores() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0) return CPU_COUNT(&set);
  return std::max(1u, std::thread::hardware_concurrency());
}

double detect_clock_mhz(const HostSources& sources) {
  if (const auto khz = read_first_line(sources.max_freq_khz)) {
    const double mhz = std::atof(khz->c_str()) / 1000;
    if (mhz > 0) return mhz;
  }
  std::ifstream in(sources.cpuinfo);
  for (std::string line; std::getline(in, line);) {
    if (!line.starts_with("cpu MHz")) continue;
    const size_t colon = line.find(':');
    const double mhz = colon == std::string::npos ? 0 : std::atof(line.c_str() + colon + 1);
    if (mhz > 0) return std::max(100.0, std::round(mhz / 100) * 100);
  }
  return kDefaultClockMhz;
}

std::map<std::string, VectorCost> host_vector_costs(int simd_bytes) {
  const int lanes = simd_bytes / 4;  // fp32 lanes; fp16/bf16 are computed in fp32
  const VectorCost simple{4, 2 * lanes};                  // two vector ALU ops per cycle
  const VectorCost iterative{12, std::max(1, lanes / 2)};  // divide / square root units
  const VectorCost transcendental{20, std::max(1, lanes / 4)};  // polynomial expansions
  std::map<std::string, VectorCost> costs = {{"default", simple}};
  for (const char* op : {"div", "sqrt", "rsqrt"}) costs[op] = iterative;
  for (const char* op : {"exp", "log", "tanh", "erf", "erfc"}) costs[op] = transcendental;
  return costs;
}

// The host Target of a CPU with these caches, cores, clock and SIMD width.
Target host_target(const Caches& caches, int cores, double clock_mhz, int simd_bytes, const std::string& source) {
  const double clock_ghz = clock_mhz / 1000;
  Target t;
  t.name = "host";
  t.kind = TargetKind::Cpu;
  t.notes =
      "Detected on this machine: UB ~ L1d, L1 ~ L2, L0A/L0B ~ half of L1d, L0C ~ L1d, BT and "
      "FixBuffer ~ L1d (no such buffers on a CPU), L2 ~ last-level cache. Fractals are 16x16x16 "
      "(int8 16x32x16) as on the NPU, so tile alignment rules match. Bandwidths, latencies and "
      "vector costs are rough estimates (DRAM 20 GB/s per core up to 200 GB/s, 100 ns), not "
      "measurements.";
  t.source = source;
  t.hard_capacity = false;
  t.split_cores = false;
  t.cv_direct = true;
  t.aic_cores = t.aiv_cores = cores;
  t.clock_mhz = clock_mhz;

  t.ub = caches.l1d;
  t.l1 = caches.l2;
  t.l0a = t.l0b = caches.l1d / 2;
  t.l0c = caches.l1d;
  t.bt = t.fixbuf = caches.l1d;
  t.l2_bytes = caches.llc;
  t.simd_bytes = simd_bytes;
  t.align_bytes = simd_bytes;
  t.cpu_flops_per_cycle = 2.0 * (simd_bytes / 4) * 2;  // two FMA units, 2 flops per lane
  t.fractal = {{DType::F32, {16, 16, 16}}, {DType::F16, {16, 16, 16}},
               {DType::BF16, {16, 16, 16}}, {DType::I8, {16, 32, 16}}};

  const double dram_gbps = std::min(kDramGbpsPerCore * cores, kDramGbpsMax);
  t.gm_read_bpc = t.ub_to_gm_bpc = dram_gbps / cores / clock_ghz;
  t.l2_read_bpc = 32;
  t.l2_write_bpc = 16;
  t.l1_to_l0a_bpc = t.l1_to_l0b_bpc = t.l1_to_ub_bpc = 64;  // a cache line per cycle from L2
  t.ub_to_l1_bpc = 32;
  t.l0c_to_ub_bpc = 2.0 * simd_bytes;  // two vector loads per cycle from L1d
  t.hbm_gbps = dram_gbps;
  t.l2_gbps = cores * t.l2_read_bpc * clock_ghz;

  t.gm_read_latency = t.gm_write_latency = static_cast<int>(kDramLatencyNs * clock_ghz);
  t.ub_copy_latency = 5;   // L1d hit
  t.l1_copy_latency = 15;  // L2 hit
  t.sync_latency = 0;      // flags are no-ops on the CPU
  t.vector_barrier = 0;
  t.kernel_launch_cycles = static_cast<int>(kParallelRegionNs * clock_ghz);
  t.task_dispatch_cycles = 200;
  t.vector_costs = host_vector_costs(simd_bytes);
  return t;
}

}  // namespace

Target detect_host_target(const HostSources& sources) {
  return host_target(detect_caches(sources.cache_dir, sources.ask_the_cpu), detect_cores(), detect_clock_mhz(sources),
                     kHostSimdBytes,
                     "sched_getaffinity; " + sources.cache_dir + "; " + sources.max_freq_khz + " or " + sources.cpuinfo +
                         "; the compiler's SIMD macros");
}

Target reference_host_target(int simd_bytes) {
  Target t = host_target(Caches{}, kReferenceHostCores, kDefaultClockMhz, simd_bytes,
                         "a fixed description (core/target.h reference_host_target), not this machine");
  t.name = "host-reference-" + std::to_string(simd_bytes * 8);
  return t;
}

}  // namespace pto
