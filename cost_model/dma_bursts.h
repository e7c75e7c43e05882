// DMA bursts in the cost model: how much longer a kernel's GM transfers keep a core's
// DMA busy because every contiguous run of a transfer moves at least one whole burst
// (Target::gm_min_burst_bytes), the way the simulator charges it
// (measure/sim/memory_system.h): a run of r bytes takes at least max(r, burst) bytes'
// time at the path's hit rate. Short rows are the whole effect, so the factors come from
// the tiles' row lengths:
//   Cube kernels load A in rows of kAL1 elements (mL1 when GM holds A transposed) and B in
//   rows of nL1 (kBL1 transposed), and store rows of nL1;
//   vector kernels load and store rows of the vector tile's last dim;
//   a tile that spans whole rows of its tensor is one run (the rows follow one another).
// The model scales the L2-hit part of MTE2, and the stores, by these factors. Reads that
// wait on an HBM fill run at the slower fill rate, which outlasts their bursts unless the
// rows are shorter still (burst / run > hit rate / fill rate): their factor is the part
// of the burst time the fill rate does not already cover.
#pragma once

#include "core/analyze.h"
#include "core/target.h"
#include "core/tensor_graph.h"
#include "core/tile_config.h"

namespace pto {

// Bytes the DMA is charged for, per byte moved (1 = no burst penalty).
struct BurstFactors {
  double read = 1;       // GM loads served by the L2, weighted by each operand's bytes
  double read_miss = 1;  // GM loads that wait on an HBM fill
  double write = 1;  // GM stores
};

// The run length (bytes) a burst of `burst_bytes` charges: max(run, burst) / run.
double burst_factor(double run_bytes, double burst_bytes);

BurstFactors burst_factors(const KernelSummary& k, const TensorGraph& graph, const TileConfig& config,
                           const Target& target);

}  // namespace pto
