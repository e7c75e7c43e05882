// Fuzzes target files: any text is a target or a usage error (through the same
// bounded JSON reader as a --target file: depth limit, duplicate keys), and a target
// round-trips through its JSON with an unchanged fingerprint.
#include <nlohmann/json.hpp>

#include "core/json_read.h"
#include "core/target.h"
#include "core/warning.h"
#include "tests/fuzz/fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const pto::WarningSink quiet = pto::set_warning_sink([](const std::string&) {});
  const std::string text(reinterpret_cast<const char*>(data), size);
  pto::fuzz::expect_usage_errors_only([&] {
    const pto::Target t = pto::Target::from_json(pto::json_read::parse(text, "target file"));
    const pto::Target back = pto::Target::from_json(t.to_json());
    if (back.to_json() != t.to_json()) pto::fuzz::broken("JSON round trip: " + text);
    if (back.fingerprint() != t.fingerprint() || t.fingerprint().size() != 16) {
      pto::fuzz::broken("fingerprint: " + text);
    }
  });
  return 0;
}
