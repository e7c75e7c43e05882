#include "core/target.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <filesystem>
#include <limits>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/shown_value.h"
#include "core/json_read.h"
#include "core/stable_hash.h"
#include "core/warning.h"

namespace pto {

namespace jr = json_read;
using nlohmann::json;

namespace {

// The built-in targets, embedded from core/targets/*.json at build time.
struct BuiltinTarget {
  const char* name;
  const char* json_text;
};
constexpr BuiltinTarget kBuiltinTargets[] = {
#include "core/builtin_targets.inc"
};

enum class Need { Required, Optional };

// The sane range of a numeric field: a value outside it is a typo or a unit mistake
// (2^31 cores, a clock of 1e-300 MHz) that would otherwise run into an allocation of
// every core or times of "inf ms"; it is rejected, naming the field.
struct Range {
  double min = 0, max = 0;
};
constexpr Range kAny{};
constexpr double kGiB = 1024.0 * 1024 * 1024;
constexpr Range kCores{1, 4096};
constexpr Range kClockMhz{10, 100000};
constexpr Range kBufferBytes{1, kGiB};
constexpr Range kBurstBytes{0, 1024 * 1024};
constexpr Range kL2Bytes{1, 1024 * kGiB};
constexpr Range kHbmBytes{0, 1024 * 1024 * kGiB};
constexpr Range kAlignBytes{1, 4096};
constexpr Range kFractal{1, 1024};
constexpr Range kBytesPerCycle{1e-3, 1e6};
constexpr Range kGbps{1e-3, 1e7};
constexpr Range kLatencyCycles{0, 1e8};
constexpr Range kParallelism{1, 1e6};
constexpr Range kCpuFlopsPerCycle{0, 1e5};
constexpr Range kSimdBytes{0, 4096};

// The one list of a Target's JSON fields: to_json, from_json and the known-key check
// all walk it, so a field added to Target needs one line here.
template <class T, class Visit>
void for_each_field(T& t, Visit&& v) {
  using enum Need;
  v("name", t.name, Required, kAny);
  v("kind", t.kind, Required, kAny);
  v("notes", t.notes, Optional, kAny);
  v("source", t.source, Optional, kAny);
  v("hard_capacity", t.hard_capacity, Optional, kAny);
  v("aic_cores", t.aic_cores, Required, kCores);
  v("aiv_cores", t.aiv_cores, Required, kCores);
  v("split_cores", t.split_cores, Optional, kAny);
  v("cv_direct", t.cv_direct, Optional, kAny);
  v("clock_mhz", t.clock_mhz, Required, kClockMhz);
  v("ub", t.ub, Required, kBufferBytes);
  v("l1", t.l1, Required, kBufferBytes);
  v("l0a", t.l0a, Required, kBufferBytes);
  v("l0b", t.l0b, Required, kBufferBytes);
  v("l0c", t.l0c, Required, kBufferBytes);
  v("bt", t.bt, Required, kBufferBytes);
  v("fixbuf", t.fixbuf, Required, kBufferBytes);
  v("l2_bytes", t.l2_bytes, Required, kL2Bytes);
  v("hbm_bytes", t.hbm_bytes, Optional, kHbmBytes);
  v("align_bytes", t.align_bytes, Optional, kAlignBytes);
  v("fractal", t.fractal, Required, kFractal);
  v("gm_read_bpc", t.gm_read_bpc, Optional, kBytesPerCycle);
  v("l2_read_bpc", t.l2_read_bpc, Optional, kBytesPerCycle);
  v("l2_write_bpc", t.l2_write_bpc, Optional, kBytesPerCycle);
  v("l1_to_l0a_bpc", t.l1_to_l0a_bpc, Optional, kBytesPerCycle);
  v("l1_to_l0b_bpc", t.l1_to_l0b_bpc, Optional, kBytesPerCycle);
  v("l1_to_ub_bpc", t.l1_to_ub_bpc, Optional, kBytesPerCycle);
  v("l0c_to_ub_bpc", t.l0c_to_ub_bpc, Optional, kBytesPerCycle);
  v("ub_to_gm_bpc", t.ub_to_gm_bpc, Optional, kBytesPerCycle);
  v("ub_to_l1_bpc", t.ub_to_l1_bpc, Optional, kBytesPerCycle);
  v("gm_min_burst_bytes", t.gm_min_burst_bytes, Optional, kBurstBytes);
  v("hbm_gbps", t.hbm_gbps, Required, kGbps);
  v("l2_gbps", t.l2_gbps, Required, kGbps);
  v("gm_read_latency", t.gm_read_latency, Optional, kLatencyCycles);
  v("gm_write_latency", t.gm_write_latency, Optional, kLatencyCycles);
  v("ub_copy_latency", t.ub_copy_latency, Optional, kLatencyCycles);
  v("l1_copy_latency", t.l1_copy_latency, Optional, kLatencyCycles);
  v("l1_to_l0_latency", t.l1_to_l0_latency, Optional, kLatencyCycles);
  v("sync_latency", t.sync_latency, Optional, kLatencyCycles);
  v("cross_core_sync_latency", t.cross_core_sync_latency, Optional, kLatencyCycles);
  v("vector_barrier", t.vector_barrier, Optional, kLatencyCycles);
  v("kernel_launch_cycles", t.kernel_launch_cycles, Optional, kLatencyCycles);
  v("task_dispatch_cycles", t.task_dispatch_cycles, Optional, kLatencyCycles);
  v("vector_costs", t.vector_costs, Optional, kAny);
  v("cpu_flops_per_cycle", t.cpu_flops_per_cycle, Optional, kCpuFlopsPerCycle);
  v("simd_bytes", t.simd_bytes, Optional, kSimdBytes);
}

std::vector<std::string_view> field_names() {
  std::vector<std::string_view> names;
  Target t;
  for_each_field(t, [&](std::string_view key, auto&, Need, Range) { names.push_back(key); });
  return names;
}

struct FieldWriter {
  json& j;
  void operator()(const char* key, const std::string& s, Need need, Range) {
    if (need == Need::Required || !s.empty()) j[key] = s;
  }
  void operator()(const char* key, TargetKind kind, Need, Range) { j[key] = target_kind_name(kind); }
  template <class Number>
  void operator()(const char* key, const Number& value, Need, Range) {
    j[key] = value;
  }
  void operator()(const char* key, const std::map<DType, Fractal>& fractals, Need, Range) {
    json& out = j[key] = json::object();
    for (const auto& [dtype, f] : fractals) out[dtype_name(dtype)] = {{"m", f.m}, {"k", f.k}, {"n", f.n}};
  }
  void operator()(const char* key, const std::map<std::string, VectorCost>& costs, Need, Range) {
    json& out = j[key] = json::object();
    for (const auto& [op, c] : costs) out[op] = {{"latency", c.latency}, {"parallelism", c.parallelism}};
  }
};

// "an integer from 1 to 4096", "a number from 0.001 to 1e+06".
std::string range_text(const char* kind, Range r) {
  char text[96];
  std::snprintf(text, sizeof text, "%s from %.15g to %.15g", kind, r.min, r.max);
  return text;
}

int64_t read_integer(const json& value, const std::string& path, Range r) {
  return jr::integer(value, path, static_cast<int64_t>(r.min), static_cast<int64_t>(r.max),
                     range_text("an integer", r));
}

DType dtype_key(const std::string& name, const std::string& path) {
  try {
    return parse_dtype(name);
  } catch (const Error&) {
    usage_error(path + ": unknown dtype " + jr::show(json(name)));
  }
}

struct FieldReader {
  const json& j;

  void operator()(const char* key, auto& field, Need need, Range range) {
    const std::string path = jr::member_path("target", key);
    if (!j.contains(key)) {
      if (need == Need::Required) usage_error(path + ": missing (a required field)");
      return;
    }
    read(j.at(key), path, field, range);
  }

  static void read(const json& v, const std::string& path, std::string& s, Range) { s = jr::string(v, path); }
  static void read(const json& v, const std::string& path, bool& b, Range) { b = jr::boolean(v, path); }
  static void read(const json& v, const std::string& path, TargetKind& kind, Range) {
    const std::string name = jr::string(v, path);
    if (name != "npu" && name != "cpu") jr::bad_value(path, "\"npu\" or \"cpu\"", v);
    kind = name == "cpu" ? TargetKind::Cpu : TargetKind::Npu;
  }
  static void read(const json& v, const std::string& path, int& i, Range r) {
    i = static_cast<int>(read_integer(v, path, r));
  }
  static void read(const json& v, const std::string& path, int64_t& i, Range r) { i = read_integer(v, path, r); }
  static void read(const json& v, const std::string& path, double& d, Range r) {
    if (!v.is_number()) jr::bad_value(path, range_text("a number", r), v);
    d = v.get<double>();
    if (!(d >= r.min && d <= r.max)) jr::bad_value(path, range_text("a number", r), v);
  }
  static void read(const json& v, const std::string& path, std::map<DType, Fractal>& fractals, Range r) {
    jr::object(v, path);
    for (const auto& [name, f] : v.items()) {
      const std::string fpath = jr::member_path(path, name);
      jr::object(f, fpath);
      jr::reject_unknown_keys(f, fpath, {"m", "k", "n"});
      Fractal fractal;
      const std::pair<const char*, int*> axes[] = {{"m", &fractal.m}, {"k", &fractal.k}, {"n", &fractal.n}};
      for (auto [axis, size] : axes) {
        if (!f.contains(axis)) usage_error(jr::member_path(fpath, axis) + ": missing (a required field)");
        *size = static_cast<int>(read_integer(f.at(axis), jr::member_path(fpath, axis), r));
      }
      fractals[dtype_key(name, fpath)] = fractal;
    }
  }
  static void read(const json& v, const std::string& path, std::map<std::string, VectorCost>& costs, Range) {
    jr::object(v, path);
    for (const auto& [key, c] : v.items()) {
      const std::string cpath = jr::member_path(path, key);
      if (const size_t colon = key.find(':'); colon != std::string::npos) dtype_key(key.substr(colon + 1), cpath);
      jr::object(c, cpath);
      jr::reject_unknown_keys(c, cpath, {"latency", "parallelism"});
      VectorCost cost;
      if (c.contains("latency")) {
        cost.latency = static_cast<int>(read_integer(c.at("latency"), cpath + ".latency", kLatencyCycles));
      }
      if (c.contains("parallelism")) {
        cost.parallelism = static_cast<int>(read_integer(c.at("parallelism"), cpath + ".parallelism", kParallelism));
      }
      costs[key] = cost;
    }
  }
};

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

// A target file holds one target: an object, or `targets --json`'s list of one.
const json& single_target(const json& j) {
  if (!j.is_array()) return j;
  if (j.size() == 1) return j[0];
  std::string names;
  for (const json& t : j) {
    names += names.empty() ? "" : ", ";
    names += t.is_object() && t.contains("name") ? jr::show(t["name"]) : "?";
  }
  usage_error("holds a list of " + std::to_string(j.size()) + " targets (" + names +
              "); a target file holds one ('pto-tune targets --json --target NAME' prints one)");
}

Target builtin_target(const BuiltinTarget& b) {
  try {
    return Target::from_json(json::parse(b.json_text));
  } catch (const std::exception& e) {
    internal_error(std::string("built-in target ") + b.name + " is malformed: " + e.what());
  }
}

}  // namespace

const char* core_type_name(CoreType t) {
  switch (t) {
    case CoreType::AIC: return "AIC";
    case CoreType::AIV: return "AIV";
    case CoreType::MIX: return "MIX";
  }
  return "?";
}

const char* target_kind_name(TargetKind k) { return k == TargetKind::Cpu ? "cpu" : "npu"; }

VectorCost Target::vector_cost(const std::string& op, DType dtype) const {
  for (const std::string& key : {op + ":" + dtype_name(dtype), op, std::string("default")}) {
    if (auto it = vector_costs.find(key); it != vector_costs.end()) return it->second;
  }
  return VectorCost{};
}

double Target::cube_flops_per_cycle(DType input) const {
  const auto it = fractal.find(input);
  if (it == fractal.end()) {
    usage_error("target " + name + " has no Cube fractal for " + dtype_name(input));
  }
  return 2.0 * it->second.m * it->second.k * it->second.n;
}

json Target::to_json() const {
  json j = json::object();
  for_each_field(*this, FieldWriter{j});
  return j;
}

std::string Target::fingerprint() const {
  // Notes and sources describe the figures; they are not hardware, so editing them
  // must not orphan the tuning records of an unchanged target.
  json j = to_json();
  j.erase("notes");
  j.erase("source");
  j.erase("hbm_bytes");  // a capacity, not a rate: it changes no tile's time (core/target.h)
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(stable_hash(j.dump())));
  return hex;
}

Target Target::from_json(const json& j) {
  jr::object(j, "target");
  // `targets --json` adds the fingerprint; a file made from it is read back as it is.
  std::vector<std::string_view> known = field_names();
  known.push_back("fingerprint");
  jr::reject_unknown_keys(j, "target", known);
  Target t;
  for_each_field(t, FieldReader{j});
  if (j.contains("fingerprint") && jr::string(j.at("fingerprint"), "target.fingerprint") != t.fingerprint()) {
    warn("target.fingerprint " + jr::show(j.at("fingerprint")) + " is not the fingerprint of the figures (" +
         t.fingerprint() + "), which were edited; records are keyed by the figures' own");
  }
  if (t.name.empty()) usage_error("target.name: expected a non-empty string, got \"\"");
  if (t.kind == TargetKind::Cpu) {
    // The CPU's compute rate and vector width have no Ascend counterpart to fall back on.
    if (t.cpu_flops_per_cycle <= 0) usage_error("target.cpu_flops_per_cycle: required > 0 for a cpu target");
    if (t.simd_bytes <= 0) usage_error("target.simd_bytes: required > 0 for a cpu target");
  }
  return t;
}

std::vector<std::string> builtin_target_names() {
  std::vector<std::string> names;
  for (const BuiltinTarget& b : kBuiltinTargets) names.push_back(b.name);
  names.push_back("host");
  return names;
}

Target load_target(const std::string& name_or_path) {
  const std::string key = lower(name_or_path);
  if (key == "host") return detect_host_target();
  for (const BuiltinTarget& b : kBuiltinTargets) {
    if (key == b.name) return builtin_target(b);
  }
  std::error_code ec;
  if (!name_or_path.empty() && std::filesystem::exists(name_or_path, ec)) {
    const std::string text = jr::read_text_file(name_or_path, "target file");
    try {
      return Target::from_json(single_target(jr::parse(text, "target file")));
    } catch (const Error& e) {
      fail(e.category(), "target file '" + name_or_path + "': " + e.what());
    }
  }
  std::string known;
  for (const std::string& n : builtin_target_names()) known += (known.empty() ? "" : ", ") + n;
  usage_error("unknown target " + shown_value(name_or_path) + ": neither a built-in target (" + known +
              ") nor a JSON file");
}

}  // namespace pto
