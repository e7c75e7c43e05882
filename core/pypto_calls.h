// PyPTO calls: a tile config written as the Python lines a PyPTO user pastes into an
// operator — `pypto.set_cube_tile_shapes([mL0,mL1],[kL0,kL1],[nL0,nL1])`,
// `pypto.set_vec_tile_shapes(...)` — plus the choices PyPTO has no setter for (fusion
// partition, n-buffer depth, L2 grouping) as comment lines, so that pasting the whole
// block is still valid Python.
//
// The one place that formats them: `pto-tune tune`, `pto-tune lookup` and the Python
// package all print a config this way, so a user sees the same text everywhere.
#pragma once

#include <string>
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

}  // namespace pto
