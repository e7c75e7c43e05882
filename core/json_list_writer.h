// JsonListWriter: writes a JSON object whose last member is a long list one element at
// a time, so that no JSON tree of the whole list is held in memory (`db export` and
// `db show --json` of 100,000 records took 1.8 GB as one tree: results/robustness.md).
// The object's other members come first, as one small tree.
#pragma once

#include <ostream>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace pto {

class JsonListWriter {
 public:
  // Writes `head`'s members (it must hold at least one) and opens the list `name`.
  JsonListWriter(std::ostream& out, const nlohmann::json& head, std::string_view name) : out_(out) {
    const std::string text = head.dump(1);  // "{\n \"a\": 1\n}"
    out_ << std::string_view(text).substr(0, text.size() - 2) << ",\n \"" << name << "\": [";
  }
  void add(const nlohmann::json& element) {
    out_ << (empty_ ? "\n  " : ",\n  ") << element.dump();
    empty_ = false;
  }
  // Closes the list and the object.
  void finish() { out_ << (empty_ ? "]\n}\n" : "\n ]\n}\n"); }

 private:
  std::ostream& out_;
  bool empty_ = true;
};

}  // namespace pto
