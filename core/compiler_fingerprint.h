// The compiler's fingerprint: what a tuning record's freshness is keyed on, derived from
// what the compiler does rather than a version number bumped by hand (issue 27). A
// record's time describes the program the compiler emitted for its (workload, config,
// target); once the pass pipeline emits a different program for the same input, the
// record describes code that no longer runs. The fingerprint hashes the programs emitted
// for a fixed probe set, so it changes exactly when one of those programs (or a refusal)
// changes, and not for a comment, a refactoring or a faster pass.
//
// The probe set: every op of the library at a small aligned shape and a ragged one, in
// its first and last dtype, with no attributes and with each attribute set to 1 alone,
// under its default config and five variations of it (every compute node its own
// kernel, split-K, a 2x2 L2 grouping, three buffers, halved vec tiles), on fixed targets
// (probe_targets()). How it can miss: a change that shows only at shapes, configs or
// targets outside the set (a rule for tiles larger than the small shapes allow, a target
// field none of the fixed targets exercises) leaves the fingerprint alone, and the
// records made before it stay fresh; a test compares the fingerprint the build embedded
// with one computed by the code under test.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/target.h"
#include "core/tile_config.h"
#include "core/workload.h"

namespace pto {

struct ProbeCase {
  Workload workload;
  TileConfig config;
  const Target* target;  // one of the targets given to probe_cases()
};

// The fixed targets the fingerprints probe: ascend910b1, ascend910b4 and ascend950pr
// (three core counts and two architectures) and the reference AVX2 and AVX-512 hosts
// (reference_host_target), never this machine's.
std::vector<Target> probe_targets();

// The probe set on `targets` (see the head comment), in a fixed order; the cases point
// into `targets`, which must outlive them. Workloads whose graph does not build (an
// attribute the shape rules out) are left out.
std::vector<ProbeCase> probe_cases(std::span<const Target> targets);

// "c" and 12 hex digits: a hash of the program (blocks and execute graph) compile()
// emits for every case, or of the category of the error it refuses a case with.
std::string compiler_fingerprint(std::span<const ProbeCase> cases);

// `kind` and the low 48 bits of `hash` in 12 hex digits: how both fingerprints read.
std::string fingerprint_text(char kind, uint64_t hash);

}  // namespace pto
