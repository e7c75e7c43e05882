// join: items with a separator between them ("matmul, softmax"), for the messages and
// listings that name several things at once.
#pragma once

#include <string>
#include <vector>

namespace pto {

inline std::string join(const std::vector<std::string>& items, const std::string& separator = ", ") {
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) out += (i ? separator : "") + items[i];
  return out;
}

}  // namespace pto
