#include "search/fusion_candidates.h"

#include <algorithm>

#include "core/error.h"

namespace pto::search {

namespace {

// The default partition's groups, as analyze reports its kernels; empty when the base
// config does not fit (analyze then lists no kernels).
FusionGroups default_groups(const Analyzer& analyzer, TileConfig base) {
  base.fusion.reset();
  FusionGroups groups;
  for (const KernelSummary& k : analyzer.analyze(base).kernels) {
    if (k.nodes.empty()) continue;  // the compiler's own copy and zeroing kernels
    std::vector<int> g(k.nodes.begin(), k.nodes.end());
    std::sort(g.begin(), g.end());
    groups.push_back(std::move(g));
  }
  return groups;
}

FusionGroups every_node_alone(const TensorGraph& graph) {
  FusionGroups groups;
  for (NodeId id : graph.compute_nodes()) groups.push_back({id});
  return groups;
}

// Each group of `groups` cut in two at each point of its order.
std::vector<FusionGroups> single_cuts(const FusionGroups& groups) {
  std::vector<FusionGroups> out;
  for (size_t g = 0; g < groups.size(); ++g) {
    for (size_t at = 1; at < groups[g].size(); ++at) {
      FusionGroups cut = groups;
      cut[g].assign(groups[g].begin(), groups[g].begin() + static_cast<std::ptrdiff_t>(at));
      cut.insert(cut.begin() + static_cast<std::ptrdiff_t>(g) + 1,
                 std::vector<int>(groups[g].begin() + static_cast<std::ptrdiff_t>(at), groups[g].end()));
      out.push_back(std::move(cut));
    }
  }
  return out;
}

// The compiler's verdict on a partition: analyze throws a usage Error for an invalid
// one. Any other Error (an Internal one is a compiler bug) is no verdict: it goes on.
bool valid_partition(const Analyzer& analyzer, TileConfig base, const FusionGroups& groups) {
  base.fusion = groups;
  try {
    analyzer.analyze(base);
    return true;
  } catch (const Error& e) {
    if (e.category() != ErrorCategory::Usage) throw;
    return false;
  }
}

}  // namespace

std::vector<std::optional<FusionGroups>> fusion_candidates(const TensorGraph& graph, const Analyzer& analyzer,
                                                           const TileConfig& base) {
  const FusionGroups defaults = default_groups(analyzer, base);
  std::vector<FusionGroups> proposals = {every_node_alone(graph)};
  for (FusionGroups& cut : single_cuts(defaults)) proposals.push_back(std::move(cut));

  std::vector<std::optional<FusionGroups>> out = {std::nullopt};
  std::vector<FusionGroups> seen = {defaults};
  for (const FusionGroups& p : proposals) {
    if (std::find(seen.begin(), seen.end(), p) != seen.end()) continue;
    seen.push_back(p);
    if (valid_partition(analyzer, base, p)) out.emplace_back(p);
  }
  return out;
}

}  // namespace pto::search
