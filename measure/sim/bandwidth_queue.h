// BandwidthQueue: one bandwidth shared by every core (HBM, or the L2's), modelled as
// a "next free time". Transfers reserve it in event order, so concurrent requests
// queue behind each other and the aggregate never exceeds the bandwidth, without
// stepping time.
#pragma once

#include <algorithm>

namespace pto::sim {

class BandwidthQueue {
 public:
  // bytes_per_cycle <= 0 means unlimited.
  explicit BandwidthQueue(double bytes_per_cycle) : bytes_per_cycle_(bytes_per_cycle) {}

  // Occupies the resource for `bytes`, starting no earlier than `earliest`;
  // returns when the last byte has passed.
  double reserve(double earliest, double bytes) {
    if (bytes <= 0 || bytes_per_cycle_ <= 0) return earliest;
    const double duration = bytes / bytes_per_cycle_;
    free_at_ = std::max(free_at_, earliest) + duration;
    busy_cycles_ += duration;
    return free_at_;
  }

  double busy_cycles() const { return busy_cycles_; }

 private:
  double bytes_per_cycle_;
  double free_at_ = 0;
  double busy_cycles_ = 0;
};

}  // namespace pto::sim
