// Simulator traces: the simulated timeline of every instruction as Chrome Trace Event
// JSON, which opens in Perfetto (ui.perfetto.dev) and chrome://tracing — the view
// PyPTO users know from msprof's pipeline view, showing at a glance why a config is
// slow (a starved Cube, an idle wave, serialized flags).
//
// The engine reports each instruction to a TraceSink (SimOptions::trace) as it is
// issued with its start and end; ChromeTrace turns that into one track per core and
// pipe, a slice per instruction (named by its mnemonic, tile and bytes in args, L2
// hit/miss bytes for GM transfers), and a flow arrow from each SET_FLAG to its
// WAIT_FLAG. Pipelined GM transfers overlap on their pipe; a slice is clipped to start
// where the previous one on its track ended, so slices never overlap and a track's
// summed slice time is the pipe's busy time, exactly as the simulator counts it.
// Large programs are capped (max_slices); the file's metadata says when.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <ostream>
#include <tuple>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/program.h"
#include "core/target.h"

namespace pto::sim {

// One instruction as the engine ran it.
struct TraceStep {
  int core = 0;                 // engine core index (pool AIC first, then AIV)
  CoreType core_type = CoreType::AIC;
  int core_in_pool = 0;         // its number among the cores of its type
  int task = -1;
  const BlockProgram* block = nullptr;
  int step = -1;                // index into block->instrs
  double start = 0, end = 0;    // cycles
  int flag_set_step = -1;       // WAIT_FLAG: the step of the SET_FLAG it waited for
  double l2_hit_bytes = -1;     // GM transfers: bytes already in L2; -1 for other steps
};

class TraceSink {
 public:
  virtual ~TraceSink() = default;
  virtual void on_step(const TraceStep& step) = 0;
};

class ChromeTrace : public TraceSink {
 public:
  static constexpr int64_t kDefaultMaxSlices = 200000;

  // max_slices <= 0: no cap.
  ChromeTrace(const Program& program, const Target& target, int64_t max_slices = kDefaultMaxSlices);

  void on_step(const TraceStep& step) override;

  // The Trace Event JSON object as text: traceEvents plus metadata (simulated, capped,
  // ...). Each event is kept as its text from the moment it is made: as JSON values, the
  // default cap's 200,000 slices took about 1 GB (a 66 MB file); as text, their size.
  std::string text() const;
  void write(std::ostream& out) const;

  bool capped() const { return dropped_ > 0; }

 private:
  struct Track {
    double last_end = 0;
    std::string name;
  };
  double to_us(double cycles) const { return cycles / clock_mhz_; }
  Track& track(const TraceStep& s);

  const Program& program_;
  double clock_mhz_;
  std::string target_;
  int64_t max_slices_;
  int64_t slices_ = 0;
  int64_t dropped_ = 0;
  int64_t flows_ = 0;
  std::map<std::pair<int, int>, Track> tracks_;  // (core, pipe)
  std::map<int, std::string> core_names_;
  // SET_FLAG slices by (task, step), so that their WAIT_FLAG (perhaps on another core of
  // a MIX task's cluster) can point back.
  std::map<std::pair<int, int>, std::tuple<int, int, double>> sets_;  // -> (core, pipe, ts us)
  void add(const nlohmann::json& event);
  std::string events_;  // the traceEvents list's items, comma-separated
};

}  // namespace pto::sim
