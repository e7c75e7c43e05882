#include "batch/batch_options.h"

namespace pto::batch {

void check(const BatchOptions& options) {
  search::check_strategy(options.strategy, options.names.strategy);
  search::check_budget(options.budget, options.names.budget);
  search::check_time_limit(options.time_limit_s, options.names.time_limit);
}

}  // namespace pto::batch
