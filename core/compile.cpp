// core::compile — runs the pass pipeline (core/passes/, one file per pass) and, when
// asked, keeps each stage's text for --emit.
#include "core/compile.h"

#include <algorithm>

#include "core/analyze.h"
#include "core/error.h"
#include "core/size_limits.h"
#include "core/passes/block_partition.h"
#include "core/passes/execute_graph.h"
#include "core/passes/fusion_partition.h"
#include "core/passes/resolve_config.h"
#include "core/passes/stage_dumps.h"
#include "core/passes/tile_expansion.h"

namespace pto {

Stage parse_stage(const std::string& name) {
  if (name == "tensor") return Stage::Tensor;
  if (name == "tile") return Stage::Tile;
  if (name == "block") return Stage::Block;
  if (name == "program") return Stage::Program;
  if (name == "exec") return Stage::Exec;
  usage_error("unknown stage '" + name + "' (expected tensor, tile, block, program or exec)");
}

std::string Compiled::dump(Stage s) const {
  switch (s) {
    case Stage::Tensor: return graph.dump();
    case Stage::Tile: return tile_dump;
    case Stage::Block: return block_dump;
    case Stage::Program: return program.dump_blocks();
    case Stage::Exec: return program.dump_exec();
  }
  return "";
}

namespace {

std::string limit_text(int64_t value, int64_t limit, const char* what) {
  return std::to_string(value) + " " + what + ", over the limit of " + std::to_string(limit);
}

}  // namespace

std::optional<std::string> program_too_large(const TilingSummary& summary, const TileConfig& config) {
  if (summary.within_program_limits()) return std::nullopt;
  const int64_t tasks = summary.tasks(), instructions = summary.instructions();
  return "config " + config.to_string() + " makes a program too large to build: " +
         (tasks > kMaxTasks ? limit_text(tasks, kMaxTasks, "tasks")
                            : limit_text(instructions, kMaxInstructions, "executed instructions")) +
         "; use larger tiles (or 'compile --emit tile' to see the tile grid)";
}

Compiled compile(const TensorGraph& graph, const TileConfig& config, const Target& target,
                 const CompileOptions& options) {
  Compiled out;
  out.graph = graph;
  out.config = config;
  if (options.last == Stage::Tensor) return out;
  const passes::ResolvedConfig rc = passes::resolve_config(graph, config);
  const passes::Partition partition = passes::partition_graph(graph, rc.fusion, target.cv_fusion());
  const passes::TilePlan plan = passes::expand_tiles(graph, partition, rc, target);

  out.config.fusion = partition.fusion;
  const bool has_matmul = std::any_of(partition.kernels.begin(), partition.kernels.end(),
                                      [](const passes::KernelSpec& k) { return k.cube.has_value(); });
  if (has_matmul) out.config.cube = rc.cube;
  if (options.dumps) out.tile_dump = passes::dump_tile_graph(graph, partition, plan, rc, target);
  if (!plan.feasible)
    fail(ErrorCategory::Infeasible, "config " + config.to_string() + " is infeasible on " + target.name + ":\n" +
                                        format_violations(plan.violations));
  if (options.last == Stage::Tile) return out;

  if (const auto problem = program_too_large(analyze(graph, config, target), config)) usage_error(*problem);
  out.program.target = target.name;
  out.program.tensors = partition.tensors;
  out.program.tensors.insert(out.program.tensors.end(), plan.extra_tensors.begin(), plan.extra_tensors.end());
  passes::partition_blocks(partition, plan, rc, out.program);
  passes::link_execute_graph(plan, out.program);
  if (options.dumps) out.block_dump = passes::dump_block_graph(out.program);
  return out;
}

}  // namespace pto
