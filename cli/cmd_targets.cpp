// `pto-tune targets`: the built-in hardware targets with their core counts, clock,
// buffer sizes and fingerprint (the key under which tuning records are stored), and
// the notes that say which figures are estimates.
#include <iostream>

#include "cli/cli.h"
#include "cli/commands.h"

namespace pto::cli {

namespace {

std::string number(double value) {
  std::string text = std::to_string(value);
  text.erase(text.find_last_not_of('0') + 1);
  if (text.back() == '.') text.pop_back();
  return text;
}

}  // namespace

int run_targets(const Args& args) {
  po::options_description options;
  options.add_options()("json", "print every field of every target as JSON");
  const auto vm = parse_command(
      args, options,
      {"targets", "[--json]",
       "Lists the hardware targets --target accepts: the Ascend NPUs described from public\n"
       "platform data and `host`, detected on this machine. --target also takes the path\n"
       "of a JSON file in the same format as `targets --json` prints.",
       "pto-tune targets"});
  if (!vm) return 0;

  std::vector<Target> targets;
  for (const std::string& name : builtin_target_names()) targets.push_back(load_target(name));

  if (vm->count("json")) {
    nlohmann::json list = nlohmann::json::array();
    for (const Target& t : targets) {
      nlohmann::json j = t.to_json();
      j["fingerprint"] = t.fingerprint();
      list.push_back(j);
    }
    print_json(std::cout, list);
    return 0;
  }
  std::vector<std::vector<std::string>> rows;
  for (const Target& t : targets) {
    rows.push_back({t.name, target_kind_name(t.kind), std::to_string(t.aic_cores), std::to_string(t.aiv_cores),
                    number(t.clock_mhz), human_bytes(t.ub), human_bytes(t.l1), human_bytes(t.l0a),
                    human_bytes(t.l0b), human_bytes(t.l0c), human_bytes(t.l2_bytes),
                    number(t.hbm_gbps), t.fingerprint()});
  }
  print_table(std::cout,
              {"target", "kind", "aic", "aiv", "mhz", "ub", "l1", "l0a", "l0b", "l0c", "l2", "hbm_gb/s",
               "fingerprint"},
              rows);
  std::cout << "\nNotes:\n";
  for (const Target& t : targets) std::cout << "  " << t.name << ": " << t.notes << "\n";
  return 0;
}

}  // namespace pto::cli
