// core::compile — the full pass pipeline from Tensor Graph to PTO program.
//
//   validate + infer shapes -> fusion partition into kernels -> tile expansion with
//   memory-level assignment and the capacity/alignment verifier (Tile Graph) -> block
//   partition into per-core block programs, isomorphic tiles sharing one (Block Graph)
//   -> codegen of PTO instructions with flags and n-buffering, plus the task
//   dependencies (Execute Graph).
//
// Each pass lives in core/passes/, one file per pass. An infeasible config throws an
// Error of category Infeasible listing every violated rule with its numbers.
#pragma once

#include <optional>
#include <string>

#include "core/analyze.h"

#include "core/program.h"
#include "core/target.h"
#include "core/tensor_graph.h"
#include "core/tile_config.h"

namespace pto {

enum class Stage { Tensor, Tile, Block, Program, Exec };
Stage parse_stage(const std::string& name);  // "tensor" | "tile" | "block" | "program" | "exec"

// The tuner and the JIT compile thousands of times and read only the program: the text
// dumps of the Tile and Block Graphs are rendered only when asked for. `last` runs the
// pipeline only as far as that stage needs: Tensor builds nothing, Tile stops after the
// Tile Graph (with its verdict), Block and later build the program; what a stage does
// not reach is left empty. Before building tasks the program is checked against
// kMaxTasks and kMaxInstructions (core/size_limits.h) with analyze()'s closed-form
// counts: past them, a usage Error naming the limit, not gigabytes of tasks.
struct CompileOptions {
  bool dumps = false;
  Stage last = Stage::Exec;
};

struct Compiled {
  TensorGraph graph;
  TileConfig config;       // as resolved (default fusion filled in)
  Program program;
  std::string tile_dump;   // Tile Graph text (kernels, tiles, levels, verifier result); with dumps
  std::string block_dump;  // Block Graph text (block programs and which tasks share them); with dumps
  // Tensor, Program and Exec are rendered on the spot; Tile and Block need `dumps`.
  std::string dump(Stage s) const;
};

Compiled compile(const TensorGraph& graph, const TileConfig& config, const Target& target,
                 const CompileOptions& options = {});

// Why compile would refuse a feasible config's program as too large (past kMaxTasks or
// kMaxInstructions, core/size_limits.h), from analyze()'s counts; nullopt when it fits.
std::optional<std::string> program_too_large(const TilingSummary& summary, const TileConfig& config);

// Runs the pipeline only as far as `last` needs: Tensor builds nothing, Tile stops
// after the Tile Graph (with its verdict), Block and later build the program. What a
// stage does not reach is left empty. Before building tasks it checks the program
// against kMaxTasks and kMaxInstructions (core/size_limits.h) with analyze()'s
// closed-form counts: past them, a usage Error naming the limit, not gigabytes of tasks.
Compiled compile_through(const TensorGraph& graph, const TileConfig& config, const Target& target, Stage last);

}  // namespace pto
