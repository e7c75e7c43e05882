// A batch file: the list of workloads a release engineer tunes offline (`pto-tune
// batch FILE`). Kept out of cli/ so that the Python package can read the same files.
//
// Two formats. JSON, a list of entries:
//   [{"op": "matmul", "shapes": "M=1..8192:pow2,1024,1024", "dtype": "fp16",
//     "attrs": {"transpose_b": 1}, "target": "ascend910b1", "backend": "sim",
//     "budget": 16, "weight": 3},
//    {"op": "elementwise", "shapes": "1024,4096", "expr": "mul(add(a, b), 2.0)"}]
// (shapes also as a list: [128, "16..64:step16", 1024]); and a plain line format for
// hand-written lists, one entry a line, '#' starts a comment:
//   matmul 1..8192:pow2,1024,1024 fp16 transpose_b=1 budget=16 weight=3
// where target=, backend=, budget= and weight= are the entry's overrides and any other
// key=value is an op attribute, except expr=, the elementwise op's expression (its words
// up to where its parentheses close: "elementwise 1024,4096 expr=mul(add(a, b), 2.0)").
// dtype may be left out ('-' or absent): the command then uses the target's default.
//
// A dimension is a number or a range that expands into one workload per value, so the
// JIT's nearest-shape lookup has buckets to land in: LO..HI:pow2 (the powers of two in
// [LO, HI]) or LO..HI:stepS (LO, LO+S, ... <= HI), optionally named (M=1..8192:pow2)
// for the reader. Several ranges in one entry expand as their product.
//
// Bounds: a range holds at most kMaxRangeValues values and a batch as many workloads
// (or the smaller bound a caller gives, as the fuzzer does), checked before they are built; a file past kMaxBatchFileBytes is refused unread. An
// entry that repeats an earlier one exactly is dropped (counted in `repeated`).
//
// A malformed file (not JSON when it starts with '[', no entries) is a usage Error. A
// bad entry (unknown op or dtype, bad range or number) is a BatchProblem naming its
// line (plain) or index (JSON) and is left out; the caller decides whether to stop.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/workload.h"

namespace pto::batch {

// The most values a range, and the most workloads a whole batch, may hold.
inline constexpr size_t kMaxRangeValues = 100000;

struct BatchEntry {
  std::string where;             // "line 3" or "entry 2": for messages
  Workload workload;             // the dtype is a placeholder when !dtype_given
  bool dtype_given = false;
  std::optional<std::string> target, backend;
  std::optional<int64_t> budget;
  double weight = 1;             // how much its speedup matters (e.g. calls per model)
};

struct BatchProblem {
  std::string where;
  std::string message;
};

struct BatchFile {
  std::vector<BatchEntry> entries;    // ranges expanded, in file order, each once
  std::vector<BatchProblem> problems; // bad entries, left out of `entries`
  size_t repeated = 0;                // entries that said again what an earlier one said, dropped
};

// Parses the text of a batch file (the format is told by its first non-blank
// character: '[' JSON, anything else plain lines). `name` is for messages.
// `max_workloads` bounds a range and the whole batch.
BatchFile parse_batch(const std::string& text, const std::string& name = "batch file",
                      size_t max_workloads = kMaxRangeValues);
// Reads and parses a file; usage Error (bad input) when it cannot be read.
BatchFile read_batch_file(const std::string& path);

// "1..64:pow2" -> 1,2,4,...,64; "16..64:step16" -> 16,32,48,64; "128" -> 128. A name
// prefix ("M=") is allowed. Usage Error naming the token for anything else, an empty
// range, or more than `max_values` values.
std::vector<int64_t> expand_dim(const std::string& token, size_t max_values = kMaxRangeValues);
// The largest batch file read_batch_file reads (a list of 100000 workloads is ~5 MiB).
inline constexpr size_t kMaxBatchFileBytes = size_t{64} << 20;

}  // namespace pto::batch
