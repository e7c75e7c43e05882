// Fuzzes Target::from_json: any JSON document is a target or a usage error, and a
// target round-trips through its JSON with an unchanged fingerprint.
#include <nlohmann/json.hpp>

#include "core/target.h"
#include "tests/fuzz/fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const nlohmann::json j = nlohmann::json::parse(data, data + size, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return 0;  // not JSON: the JSON library's business, not ours
  pto::fuzz::expect_usage_errors_only([&] {
    const pto::Target t = pto::Target::from_json(j);
    const pto::Target back = pto::Target::from_json(t.to_json());
    if (back.to_json() != t.to_json()) pto::fuzz::broken("JSON round trip: " + j.dump());
    if (back.fingerprint() != t.fingerprint() || t.fingerprint().size() != 16) {
      pto::fuzz::broken("fingerprint: " + j.dump());
    }
  });
  return 0;
}
