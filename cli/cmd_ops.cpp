// `pto-tune ops`: the op library — each operator's name, shape signature, attributes,
// element types and what it computes.
#include <iostream>

#include "cli/cli.h"
#include "cli/commands.h"
#include "core/op_library.h"

namespace pto::cli {

namespace {

std::vector<std::string> dtype_names(const std::vector<DType>& dtypes) {
  std::vector<std::string> names;
  for (DType t : dtypes) names.push_back(dtype_name(t));
  return names;
}

}  // namespace

int run_ops(const Args& args) {
  po::options_description options;
  options.add_options()("json", "print JSON instead of a table");
  const auto vm = parse_command(
      args, options,
      {"ops", "[--json]",
       "Lists the operators pto-tune can compile and tune: the sizes --shapes gives (in\n"
       "signature order), the attributes --attrs accepts (--expr EXPR: the op takes an\n"
       "expression, see --help of tune) and the dtypes they run in.",
       "pto-tune ops --json"});
  if (!vm) return 0;

  if (vm->count("json")) {
    nlohmann::json list = nlohmann::json::array();
    for (const OpDef& op : op_library()) {
      list.push_back({{"name", op.name}, {"signature", op.dims}, {"attrs", op.attrs}, {"expr", op.takes_expr},
                      {"dtypes", dtype_names(op.dtypes)}, {"summary", op.summary}});
    }
    print_json(std::cout, list);
    return 0;
  }
  std::vector<std::vector<std::string>> rows;
  for (const OpDef& op : op_library()) {
    const std::string attrs = op.takes_expr ? "--expr EXPR" : op.attrs.empty() ? "-" : join(op.attrs, ",");
    rows.push_back({op.name, join(op.dims, ","), attrs,
                    join(dtype_names(op.dtypes), ","), op.summary});
  }
  print_table(std::cout, {"op", "signature", "attrs", "dtypes", "summary"}, rows);
  return 0;
}

}  // namespace pto::cli
