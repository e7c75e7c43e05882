// What the report programs of bench/ share (ranking_bench, ranking_cpu_bench,
// tuning_bench: each prints Markdown tables for results/, rather than timing a loop with
// Google Benchmark): their options, read by Boost.Program_options with a --help that
// lists them; the --filter that picks workloads of the suite; the number format of their
// table cells; and a main that turns an error into one line and the README's exit codes
// (2 for bad usage, 1 otherwise).
// Header-only: every bench program is an executable of its own.
#pragma once

#include <boost/program_options.hpp>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <functional>
#include <iostream>
#include <string>
#include <vector>

#include "core/error.h"

namespace pto::bench {

namespace po = boost::program_options;

// Reads argv against `options` (--help is added): prints the usage and the options and
// exits 0 on --help; a bad option or value is a usage Error that names it.
inline po::variables_map parse_report_options(int argc, char** argv, const std::string& usage,
                                              po::options_description options) {
  options.add_options()("help", "print this help and exit");
  po::variables_map vm;
  try {
    po::store(po::command_line_parser(argc, argv).options(options).run(), vm);
    po::notify(vm);
  } catch (const po::error& e) {
    usage_error(std::string(e.what()) + " (see --help)");
  }
  if (vm.count("help")) {
    std::cout << "usage: " << usage << "\n\n" << options;
    std::exit(0);
  }
  return vm;
}

// One number, printf-formatted, for a table cell; "-" when it is not finite (a tau of
// one pass, a time never measured).
inline std::string fmt(const char* format, double v) {
  if (!std::isfinite(v)) return "-";
  char text[64];
  std::snprintf(text, sizeof text, format, v);
  return text;
}

// The geometric mean of positive numbers; 0 for none.
inline double geomean(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += std::log(x);
  return v.empty() ? 0 : std::exp(s / static_cast<double>(v.size()));
}

// The --filter option: comma-separated substrings of a workload's key or label; empty
// selects every workload.
inline bool selected(const std::string& filter, const std::string& key, const std::string& label) {
  if (filter.empty()) return true;
  for (size_t start = 0; start <= filter.size();) {
    const size_t end = std::min(filter.find(',', start), filter.size());
    const std::string part = filter.substr(start, end - start);
    if (!part.empty() && (key.find(part) != std::string::npos || label.find(part) != std::string::npos)) return true;
    start = end + 1;
  }
  return false;
}

// "PROGRAM: message", unless the message already names the program.
inline void print_error(const std::string& program, const std::string& message) {
  const std::string prefix = program + ": ";
  std::cerr << (message.starts_with(prefix) ? "" : prefix) << message << "\n";
}

// Runs a report program's body: an error becomes "PROGRAM: message" on stderr and the
// exit code of its category (an unexpected exception: 1).
inline int report_main(const char* program, const std::function<int()>& body) {
  try {
    return body();
  } catch (const Error& e) {
    print_error(program, e.what());
    return exit_code(e.category());
  } catch (const std::exception& e) {
    print_error(program, e.what());
    return 1;
  }
}

}  // namespace pto::bench
