// The L2/HBM traffic model: where a kernel's GM bytes go — which loads wait on an HBM
// fill, which hit in L2, and the bytes each shared level carries (the cost model's
// rooflines).
//
// L2 reuse from first touches and re-reads of each GM tensor the kernel reads (the
// summary's `reads`): a tensor an earlier kernel left in L2 (it fits, with what was
// touched since) always hits. Otherwise:
//   Cube operands, for the busiest core: its first-wave tile is cold (all cores start
//     together on cold panels and wait on the same HBM fill); a later tile is cold in the
//     waves that reach panels no earlier wave touched (their count: the panels left after
//     the first wave, as many per wave as the first wave touched); other re-reads hit
//     while the kernel's footprint fits in L2, else the later waves hit at the PyPTO
//     guide's steady-state ratio for the tiles in flight in one wave, mDim x nDim
//     (l2_group, else row-major order):
//       hit = 1 - (mL1/nDim + nL1/mDim) / (mL1 + nL1)
//   Other reads (vector kernels, epilogue operands): the first wave's cores wait on the
//     first fill (min(cores, re-reads) x distinct bytes), the rest hit;
//   the fused Cube->vector workspace always hits.
// HBM bytes: each tensor's first touch (its distinct bytes; a Cube operand of a kernel
// that overflows L2: the first wave plus the steady-state misses), nothing for a tensor
// left in L2, and writes beyond what the write-back L2 absorbs (its capacity); the fused
// workspace stays in L2. L2 bytes: all GM traffic, split-K's read-backs included.
#pragma once

#include "core/analyze.h"
#include "core/target.h"
#include "core/tile_config.h"

namespace pto {

// Where a kernel's GM bytes go.
struct Traffic {
  double workspace_half = 0;  // fused workspace: written by the AIC, read back by the AIV
  double operand_bytes = 0;   // GM loads other than the fused workspace
  double cold_bytes = 0;      // of those, loads that wait on an HBM fill
  double hit = 0;             // L2 hit ratio of the operand loads: 1 - cold / operand
  double hbm_bytes = 0;       // through HBM: read misses, writes the L2 cannot absorb
  double l2_bytes = 0;        // through L2: all GM traffic, split-K read-backs included
};

// One kernel's traffic under `config` (its nbuffer-independent part: l2_group orders
// the tiles) on `target`.
Traffic kernel_traffic(const KernelSummary& k, const TileConfig& config, const Target& target);

}  // namespace pto
