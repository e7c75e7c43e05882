// `pto-tune compile`: runs the compiler on one workload for one target and prints one
// stage of it (Tensor, Tile, Block Graph, the PTO program or the execute graph), so a
// developer can see what a tile config turns into.
#include <iostream>

#include "cli/cli.h"
#include "cli/commands.h"
#include "core/compile.h"
#include "core/op_library.h"

namespace pto::cli {

int run_compile(const Args& args) {
  po::options_description options;
  add_workload_options(options);
  add_target_option(options, "ascend910b1");
  add_config_option(options);
  options.add_options()
      ("emit", po::value<std::string>()->default_value("tile"),
       "stage to print: tensor, tile, block, program or exec");
  const auto vm = parse_command(
      args, options,
      {"compile", "--op OP --shapes DIMS [options]",
       "Compiles one workload with a tile config (given, or the op's default) and prints\n"
       "a stage of the pipeline: the Tensor Graph, the Tile Graph with the capacity and\n"
       "alignment verdict, the Block Graph, the PTO program or the execute graph. An\n"
       "infeasible config is an error listing every violated rule.",
       "pto-tune compile --op matmul --shapes 512,512,512 --dtype fp16 --target ascend910b1 "
       "--config '{\"cube\":{\"m\":[128,128],\"k\":[64,256],\"n\":[256,256]}}' --emit tile"});
  if (!vm) return 0;

  const Stage stage = parse_stage((*vm)["emit"].as<std::string>());
  const Target target = target_from(*vm);
  const Workload w = workload_from(*vm, target);
  const TensorGraph graph = build_graph(w);
  const TileConfig config = config_from(*vm, w, graph, target);
  const Compiled compiled = compile(graph, config, target, CompileOptions{.dumps = true});
  std::cout << "# " << w.key() << " on " << target.name << " (" << target.fingerprint() << ")\n"
            << "# config " << compiled.config.to_string() << "\n"
            << compiled.dump(stage);
  return 0;
}

}  // namespace pto::cli
