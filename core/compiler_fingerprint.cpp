#include "core/compiler_fingerprint.h"

#include <algorithm>
#include <cstdio>

#include "core/compile.h"
#include "core/error.h"
#include "core/op_library.h"
#include "core/stable_hash.h"

namespace pto {

namespace {

constexpr int64_t kAligned = 96;
constexpr int64_t kRagged[] = {257, 33, 130};
constexpr const char* kProbeExpression = "mul(add(a,b),2.0)";

// Leading dims beyond the last three are batch-like and kept at 2, so that a rank-5
// attention's program stays small.
Shape probe_shape(size_t rank, bool ragged) {
  Shape shape(rank, 2);
  for (size_t i = rank > 3 ? rank - 3 : 0, j = 0; i < rank; ++i, ++j) shape[i] = ragged ? kRagged[j % 3] : kAligned;
  return shape;
}

std::vector<std::map<std::string, int64_t>> attr_variants(const OpDef& op) {
  std::vector<std::map<std::string, int64_t>> variants{{}};
  for (const std::string& a : op.attrs) variants.push_back({{a, 1}});
  return variants;
}

std::vector<DType> probe_dtypes(const OpDef& op) {
  std::vector<DType> dtypes{op.dtypes.front()};
  if (op.dtypes.back() != op.dtypes.front()) dtypes.push_back(op.dtypes.back());
  return dtypes;
}

// The default config and its variations (head comment of the header).
std::vector<TileConfig> probe_configs(const TileConfig& base, const TensorGraph& graph) {
  std::vector<TileConfig> configs{base};
  TileConfig unfused = base;
  unfused.fusion.emplace();
  for (NodeId id : graph.compute_nodes()) unfused.fusion->push_back({static_cast<int>(id)});
  configs.push_back(unfused);
  if (base.cube) {
    TileConfig split = base;
    split.cube->split_k = !split.cube->split_k;
    configs.push_back(split);
    TileConfig grouped = base;
    grouped.l2_group = std::make_pair(int64_t{2}, int64_t{2});
    configs.push_back(grouped);
  }
  TileConfig buffered = base;
  buffered.nbuffer = 3;
  configs.push_back(buffered);
  if (base.vec) {
    TileConfig halved = base;
    for (int64_t& d : *halved.vec) d = std::max<int64_t>(1, d / 2);
    configs.push_back(halved);
  }
  return configs;
}

}  // namespace

std::vector<Target> probe_targets() {
  std::vector<Target> targets;
  for (const char* name : {"ascend910b1", "ascend910b4", "ascend950pr"}) targets.push_back(load_target(name));
  targets.push_back(reference_host_target(32));
  targets.push_back(reference_host_target(64));
  return targets;
}

std::vector<ProbeCase> probe_cases(std::span<const Target> targets) {
  std::vector<ProbeCase> cases;
  for (const OpDef& op : op_library())
    for (bool ragged : {false, true})
      for (DType dtype : probe_dtypes(op))
        for (const auto& attrs : attr_variants(op)) {
          Workload w{op.name, probe_shape(op.dims.size(), ragged), dtype, attrs};
          if (op.takes_expr) w.expr = kProbeExpression;
          try {
            const TensorGraph graph = build_graph(w);
            for (const Target& t : targets)
              for (TileConfig& c : probe_configs(default_config(w, graph, t), graph)) cases.push_back({w, std::move(c), &t});
          } catch (const Error&) {
            // a combination the op refuses: not part of the set
          }
        }
  return cases;
}

std::string fingerprint_text(char kind, uint64_t hash) {
  char text[16];
  std::snprintf(text, sizeof text, "%c%012llx", kind, static_cast<unsigned long long>(hash & 0xffffffffffffull));
  return text;
}

std::string compiler_fingerprint(std::span<const ProbeCase> cases) {
  uint64_t h = 0;
  for (const ProbeCase& c : cases) {
    std::string emitted;
    try {
      const Compiled compiled = compile(build_graph(c.workload), c.config, *c.target);
      emitted = compiled.program.dump_blocks() + compiled.program.dump_exec();
    } catch (const Error& e) {
      emitted = std::string("refused: ") + to_string(e.category());
    }
    h = stable_hash_mix(h, stable_hash(emitted));
  }
  return fingerprint_text('c', h);
}

}  // namespace pto
