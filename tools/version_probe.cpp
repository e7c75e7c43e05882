// pto-version-probe OUT: writes the header of derived versions (OUT, included as
// "derived_versions.h" by search/tuning_record.cpp) that tuning records carry as their
// compiler and cost-model versions: the fingerprints of core/compiler_fingerprint.h and
// cost_model/model_fingerprint.h, computed at build time by the code being built. OUT is
// left untouched when its text would not change, so that nothing recompiles for it.
#include <exception>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "core/atomic_file.h"
#include "core/compiler_fingerprint.h"
#include "cost_model/model_fingerprint.h"

namespace {

std::string header_text() {
  const std::vector<pto::Target> targets = pto::probe_targets();
  const std::vector<pto::ProbeCase> cases = pto::probe_cases(targets);
  return "// Made by tools/version_probe.cpp at build time (core/compiler_fingerprint.h); not edited by hand.\n"
         "#pragma once\n\n"
         "namespace pto::derived {\n\n"
         "inline constexpr const char* kCompilerFingerprint = \"" + pto::compiler_fingerprint(cases) + "\";\n"
         "inline constexpr const char* kCostModelFingerprint = \"" + pto::cost_model_fingerprint(cases) + "\";\n"
         "inline constexpr int kProbeCases = " + std::to_string(cases.size()) + ";\n\n"
         "}  // namespace pto::derived\n";
}

std::string file_text(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: pto-version-probe OUT\n";
    return 2;
  }
  try {
    const std::string text = header_text();
    if (file_text(argv[1]) != text) pto::write_file_atomically(argv[1], text, "the derived versions");
  } catch (const std::exception& e) {
    std::cerr << "pto-version-probe: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
