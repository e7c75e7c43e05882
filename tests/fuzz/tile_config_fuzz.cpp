// Fuzzes TileConfig::parse: any text is a config or a usage error, and a config
// round-trips through its JSON and its compact text.
#include <nlohmann/json.hpp>

#include "core/tile_config.h"
#include "core/warning.h"
#include "tests/fuzz/fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const pto::WarningSink quiet = pto::set_warning_sink([](const std::string&) {});  // duplicate keys
  const std::string text(reinterpret_cast<const char*>(data), size);
  pto::fuzz::expect_usage_errors_only([&] {
    const pto::TileConfig c = pto::TileConfig::parse(text);
    if (pto::TileConfig::from_json(c.to_json()) != c) pto::fuzz::broken("JSON round trip: " + text);
    if (pto::TileConfig::parse(c.to_string()) != c) pto::fuzz::broken("text round trip: " + text);
  });
  return 0;
}
