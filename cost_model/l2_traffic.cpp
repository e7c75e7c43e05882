// The L2/HBM traffic model (see l2_traffic.h).
#include "cost_model/l2_traffic.h"

#include <algorithm>
#include <utility>

namespace pto {

namespace {

// The traffic rules of one target.
struct L2Traffic {
  const Target& target;

  // The PyPTO guide's steady-state L2 hit ratio of Cube operand loads: the tiles of one
  // wave share their panels, nothing is reused across waves.
  double steady_state_hit_ratio(const KernelSummary& k, const TileConfig& config) const {
    const size_t r = k.tile.size();
    if (!k.uses_cube || r < 2) return 0;
    const double mL1 = k.tile[r - 2], nL1 = k.tile[r - 1];
    const int64_t m_tiles = k.tile_counts[r - 2], n_tiles = k.tile_counts[r - 1];
    int64_t width = n_tiles, height = m_tiles;
    if (config.l2_group) {
      height = std::min(config.l2_group->first, m_tiles);
      width = std::min(config.l2_group->second, n_tiles);
    }
    const int64_t in_flight = tiles_in_flight(k);
    const double n_dim = std::min(in_flight, width);
    const double m_dim = std::min(height, ceil_div(in_flight, static_cast<int64_t>(n_dim)));
    return 1.0 - (mL1 / n_dim + nL1 / m_dim) / (mL1 + nL1);
  }

  // Output tiles the AIC cores work on at once (split-K: each tile's chunks side by side).
  int64_t tiles_in_flight(const KernelSummary& k) const {
    return std::min<int64_t>(num_elements(k.tile_counts),
                             std::max<int64_t>(1, target.aic_cores / std::max<int64_t>(k.split_k, 1)));
  }

  // Rows and columns of one batch entry's tile grid that the first wave of tiles covers,
  // in dispatch order (row-major, or groups of l2_group rows x columns).
  std::pair<int64_t, int64_t> first_wave_extent(const KernelSummary& k, const TileConfig& config) const {
    const size_t r = k.tile.size();
    const int64_t m_tiles = k.tile_counts[r - 2], n_tiles = k.tile_counts[r - 1];
    const int64_t wave = tiles_in_flight(k);
    if (wave >= m_tiles * n_tiles) return {m_tiles, n_tiles};
    int64_t h = 1, w = n_tiles;
    if (config.l2_group) {
      h = std::min(config.l2_group->first, m_tiles);
      w = std::min(config.l2_group->second, n_tiles);
    }
    // Full bands of h rows, then full groups of h x w tiles, then rows of a partial group.
    const int64_t band = h * n_tiles, group = h * w;
    const int64_t bands = wave / band, groups = wave % band / group, rest = wave % band % group;
    if (bands > 0) {
      const int64_t partial_rows = groups > 0 ? h : std::min(h, ceil_div(rest, w));
      return {std::min(m_tiles, bands * h + partial_rows), n_tiles};
    }
    if (groups > 0) return {h, std::min(n_tiles, groups * w + std::min(w, rest))};
    return {ceil_div(rest, w), std::min(w, rest)};
  }

  // Loads of one Cube operand that wait on an HBM fill, and its HBM bytes, for the busiest
  // core (the one the kernel waits for). The first wave starts cold: its cores wait on the
  // fills of the panels they share. A later wave that reaches a panel no earlier wave
  // touched waits on that fill too; the other re-reads hit while the kernel's footprint
  // fits in L2 (else the guide's steady state holds for the later waves). `cold` is the
  // busiest core's loads scaled back to all tiles, as the rest of the model counts work.
  struct ColdReads {
    double cold = 0;  // loads at the HBM fill rate (a core's own fetch or a shared one)
    double hbm = 0;   // bytes fetched from HBM
  };
  ColdReads cube_operand_cold(const KernelSummary& k, const TensorRead& read, bool is_a,
                              const TileConfig& config) const {
    if (read.l2_resident) return {};
    const size_t r = k.tile.size();
    const int64_t m_tiles = k.tile_counts[r - 2], n_tiles = k.tile_counts[r - 1];
    const int64_t grid = m_tiles * n_tiles;
    const int64_t tiles = num_elements(k.tile_counts), batch = tiles / grid;
    const double per_tile = read.bytes / static_cast<double>(tiles);
    const int64_t wave = tiles_in_flight(k), waves = ceil_div(tiles, wave);
    const double first_wave = static_cast<double>(wave) * per_tile;
    double cold_later_waves = 0;
    ColdReads out;
    if (k.touched_bytes <= static_cast<double>(target.l2_bytes)) {
      const auto [rows, cols] = first_wave_extent(k, config);
      const int64_t panels = batch * (is_a ? m_tiles : n_tiles);
      const int64_t first_panels = std::min(batch, ceil_div(wave, grid)) * (is_a ? rows : cols);
      cold_later_waves = static_cast<double>(std::min(waves - 1, ceil_div(panels - first_panels, first_panels)));
      out.hbm = read.distinct_bytes;
    } else {
      const double miss = 1 - steady_state_hit_ratio(k, config);
      cold_later_waves = static_cast<double>(waves - 1) * miss;
      out.hbm = first_wave + (read.bytes - first_wave) * miss;
    }
    const double busiest = per_tile * (1 + cold_later_waves);
    out.cold = std::min(read.bytes, busiest * static_cast<double>(tiles) / static_cast<double>(waves));
    return out;
  }

  // A vector operand: its first read comes from HBM unless an earlier kernel left it in
  // L2; the cores of the first wave that re-read it (broadcast rows) wait on that fill;
  // later re-reads hit.
  static ColdReads vector_operand_cold(const TensorRead& read, int64_t cores) {
    if (read.l2_resident || read.distinct_bytes <= 0) return {};
    const double rereads = read.bytes / read.distinct_bytes;
    return {std::min(read.bytes, read.distinct_bytes * std::min<double>(cores, rereads)),
            read.distinct_bytes};
  }

  Traffic traffic(const KernelSummary& k, const TileConfig& config) const {
    Traffic r;
    r.workspace_half = k.workspace_bytes / 2;
    r.operand_bytes = std::max(0.0, k.gm_read_bytes - r.workspace_half);
    const int64_t cores = k.uses_cube ? target.aic_cores : (target.split_cores ? target.aiv_cores : target.aic_cores);
    double cold = 0, hbm_read = 0;
    for (const TensorRead& read : k.reads) {
      if (k.uses_cube && read.tensor == k.cube_out) continue;  // the fused workspace stays in L2
      const bool operand = k.uses_cube && (read.tensor == k.cube_a || read.tensor == k.cube_b);
      const ColdReads c = operand ? cube_operand_cold(k, read, read.tensor == k.cube_a, config)
                                  : vector_operand_cold(read, cores);
      cold += c.cold;
      hbm_read += c.hbm;
    }
    r.cold_bytes = std::min(cold, r.operand_bytes);
    r.hit = r.operand_bytes > 0 ? 1.0 - r.cold_bytes / r.operand_bytes : 0;
    const double hbm_write =
        std::max(0.0, k.gm_write_bytes - r.workspace_half - static_cast<double>(target.l2_bytes));
    r.hbm_bytes = hbm_read + hbm_write;
    r.l2_bytes = k.gm_read_bytes + k.gm_write_bytes + (k.atomic_split_k ? k.l0c_out_bytes : 0);
    return r;
  }
};

}  // namespace

Traffic kernel_traffic(const KernelSummary& k, const TileConfig& config, const Target& target) {
  return L2Traffic{target}.traffic(k, config);
}

}  // namespace pto
