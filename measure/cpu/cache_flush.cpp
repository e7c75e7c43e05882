#include "measure/cpu/cache_flush.h"

#include <algorithm>
#include <cstring>

namespace pto::measure {

namespace {
constexpr int64_t kUnknownLlcBytes = 64ll << 20;
constexpr int64_t kMinimumBytes = 4ll << 20;
}  // namespace

CacheFlusher::CacheFlusher(int64_t llc_bytes)
    : buffer_(static_cast<size_t>(
          std::max(kMinimumBytes, llc_bytes > 0 ? 2 * llc_bytes : kUnknownLlcBytes))) {}

void CacheFlusher::flush() {
  // A different value each pass: every line is dirtied again, never found unchanged.
  ++pass_;
  std::memset(buffer_.data(), pass_, buffer_.size());
}

}  // namespace pto::measure
