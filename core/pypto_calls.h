// PyPTO calls: a tile config written as the Python lines a PyPTO user pastes into an
// operator — `pypto.set_cube_tile_shapes([mL0,mL1],[kL0,kL1],[nL0,nL1])`,
// `pypto.set_vec_tile_shapes(...)` — plus, as comment lines (so that pasting the whole
// block is still valid Python), what is not a setter call: the fusion partition and the
// L2 grouping (kernel structure, which core/pypto_module.h writes out), the n-buffer
// depth (flash_attention's kernel argument; for any other op a pto-tune-only override,
// PyPTO having no buffer-depth setter).
//
// The one place that formats them: `pto-tune tune`, `pto-tune lookup` and the Python
// package all print a config this way, so a user sees the same text everywhere.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "core/tile_config.h"

namespace pto {

// The lines in order: the cube setter, the vec setter; for a kernel of stages
// (flash_attention), its loop's blocks as a comment and each stage's setters after a
// "# stage c1:" line, in run order (c1, v1, c2, v2); then the comment lines. A config
// with no key (an op the compiler tiles on its own) gives one comment saying so.
std::vector<std::string> pypto_calls(const TileConfig& config);
// The same lines joined with '\n', each line prefixed with `indent`.
std::string pypto_snippet(const TileConfig& config, const std::string& indent = "");

// A config's tile sets in the order a kernel sets them: flash_attention's stages by
// number, the Cube's before the vector's of the same number (c1, v1, c2, v2); any other
// op's cube and vec tiles as its one stage, kSingleStage (first, should a config hold
// both). Empty when the config has no tiles.
inline constexpr const char* kSingleStage = "main";
std::vector<std::pair<std::string, StageTiles>> pypto_stages(const TileConfig& config);

// set_cube_tile_shapes' k argument: [kL0,kL1] when both L1 sizes agree, [kL0,kAL1,kBL1]
// otherwise (python/pypto/config.py, CubeTile, takes either).
std::vector<int64_t> pypto_k(const CubeTile& cube);

// The comment that says what a config's nbuffer is in PyPTO terms (without the "# ").
std::string pypto_nbuffer_note(const TileConfig& config);

}  // namespace pto
