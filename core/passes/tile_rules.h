// The tile-shape verifier (part of pass 3, tile expansion): every rule of
// shared/ascend-facts.md "Tile-shape rules" and docs/compiler.md "Tiles", checked on
// one kernel's tiling, each broken rule reported with its numbers.
//
// Capacity and alignment rules are hard on NPU targets and soft on the host (the CPU
// has no such limits; the report stays in the tile dump). Rules the generated program
// depends on for correctness — a cut reduction axis that cannot stream, kAL1/kBL1
// multiples, split-K's and the K loop's restrictions, the vec tile's rank — are hard
// everywhere. analyze() and compile() call the same checks, so they list the same
// violations; the strings are built only for rules that fail.
#pragma once

#include <string>

#include "core/passes/pipeline_ir.h"
#include "core/target.h"

namespace pto::passes {

class RuleCheck {
 public:
  RuleCheck(const Target& target, TilePlan& plan) : target_(target), plan_(plan) {}
  // Names the kernel in every detail (`kernel "y": ...`); null when the graph has one.
  void set_kernel(const std::string* name) { kernel_ = name; }

  // `ct` with its slots decided (tile_expansion.cpp).
  void cube(const CubeSpec& spec, const CubeTile& given, const CubeTiling& ct, bool has_epilogue);
  // `tile` as the config gives it (before padding), `vt` the tile used.
  void vec_rank(const Shape& given, const Shape& iteration);
  // `unstreamable`: why a tile that cuts a reduced dim cannot stream it (empty when it
  // streams, or cuts none).
  void vector(const TensorGraph& g, const VectorBody& body, const Shape& vt, const VecTiling& layout,
              const std::string& unstreamable);
  // A rule a kernel kind checks itself (flash_attention's, attention_tiling.h).
  void rule(const char* name, const std::string& detail, bool hard) { fail(name, detail, hard); }

 private:
  void k_loop(const CubeSpec& spec, const CubeTile& c, bool has_epilogue);
  void broadcast_stores(const VectorBody& body, const Shape& vector_tile);
  void fail(const char* rule, const std::string& detail, bool hard);
  void alignment(const char* rule, const char* name, int64_t v, int64_t align, DType dtype);

  const Target& target_;
  TilePlan& plan_;
  const std::string* kernel_ = nullptr;
};

}  // namespace pto::passes
