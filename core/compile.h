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

#include <string>

#include "core/program.h"
#include "core/target.h"
#include "core/tensor_graph.h"
#include "core/tile_config.h"

namespace pto {

enum class Stage { Tensor, Tile, Block, Program, Exec };
Stage parse_stage(const std::string& name);  // "tensor" | "tile" | "block" | "program" | "exec"

// The tuner and the JIT compile thousands of times and read only the program: the text
// dumps of the Tile and Block Graphs are rendered only when asked for.
struct CompileOptions {
  bool dumps = false;
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

}  // namespace pto
