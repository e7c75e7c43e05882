// pto-tune-worker: measures cpu candidates in a fresh process for a parent that must
// not fork itself (measure/cpu/worker.h). Not meant to be run by hand.
#include "measure/cpu/worker.h"

int main(int argc, char** argv) { return pto::measure::worker_main(argc, argv); }
