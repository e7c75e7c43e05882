// Cache eviction between timed runs: writes over a buffer larger than the last-level
// cache, so that the next run starts with cold caches, as a kernel does after the rest
// of a model's layers have run (RunnerOptions::flush_cache).
#pragma once

#include <cstdint>
#include <vector>

namespace pto::measure {

class CacheFlusher {
 public:
  // `llc_bytes`: the host's last-level cache (Target::l2_bytes on the host target);
  // the buffer is twice that, and a generous default when it is unknown (<= 0).
  explicit CacheFlusher(int64_t llc_bytes);
  void flush();
  int64_t buffer_bytes() const { return static_cast<int64_t>(buffer_.size()); }

 private:
  std::vector<unsigned char> buffer_;
  unsigned char pass_ = 0;
};

}  // namespace pto::measure
