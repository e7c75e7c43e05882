// Fuzzes the workload parsers: any text is a workload key, shape list, attribute list
// and elementwise expression or a usage error (an expression is canonical after one
// round trip), and a parsed key is canonical after one round trip. A parsed
// workload's graph builds or is a usage error: sizes that overflow int64 or pass the
// tensor limit are refused (UBSan reports any product that wraps).
#include "core/expression.h"
#include "core/op_library.h"
#include "core/workload.h"
#include "tests/fuzz/fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  pto::fuzz::expect_usage_errors_only([&] {
    const std::string key = pto::Workload::parse_key(text).key();
    if (pto::Workload::parse_key(key).key() != key) pto::fuzz::broken("key round trip: " + text);
  });
  pto::fuzz::expect_usage_errors_only([&] { pto::build_graph(pto::Workload::parse_key(text)); });
  pto::fuzz::expect_usage_errors_only([&] { pto::parse_shape_list(text); });
  pto::fuzz::expect_usage_errors_only([&] { pto::parse_attrs(text); });
  pto::fuzz::expect_usage_errors_only([&] {
    const std::string canonical = pto::canonical_expression(text);
    if (pto::canonical_expression(canonical) != canonical) pto::fuzz::broken("expression round trip: " + text);
  });
  return 0;
}
