// JsonListWriter writes what the same object built as one tree would say: the head's
// members and the list, for an empty list and a long one.
#include <sstream>

#include <gtest/gtest.h>

#include "core/json_list_writer.h"

namespace pto {
namespace {

using nlohmann::json;

TEST(JsonListWriter, WritesTheObjectOneTreeWouldHold) {
  for (const int n : {0, 1, 1000}) {
    json tree{{"format", "x"}, {"version", 1}, {"records", json::array()}};
    std::ostringstream out;
    JsonListWriter list(out, {{"format", "x"}, {"version", 1}}, "records");
    for (int i = 0; i < n; ++i) {
      const json element{{"i", i}, {"nested", {{"list", {i, i + 1}}}}};
      tree["records"].push_back(element);
      list.add(element);
    }
    list.finish();
    EXPECT_EQ(json::parse(out.str()), tree) << n;
    EXPECT_TRUE(out.str().ends_with("}\n"));
  }
}

}  // namespace
}  // namespace pto
