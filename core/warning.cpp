#include "core/warning.h"

#include <iostream>
#include <mutex>
#include <utility>

namespace pto {

namespace {

std::mutex& sink_mutex() {
  static std::mutex m;
  return m;
}

WarningSink& sink() {
  static WarningSink s;
  return s;
}

}  // namespace

WarningSink set_warning_sink(WarningSink next) {
  const std::lock_guard<std::mutex> lock(sink_mutex());
  return std::exchange(sink(), std::move(next));
}

void warn(const std::string& message) {
  const std::lock_guard<std::mutex> lock(sink_mutex());
  if (sink()) {
    sink()(message);
  } else {
    std::cerr << "pto-tune: warning: " << message << "\n";
  }
}

}  // namespace pto
