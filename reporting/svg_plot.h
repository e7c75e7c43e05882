// SvgPlot: the one small plot helper of `pto-tune report` — scatter/line plots with
// linear or log axes and horizontal bar charts, as self-contained SVG text (no
// scripts, no fonts to fetch). Every plot has a title, axis labels with units and a
// legend outside the plot area, tick labels spaced so that none overlaps another, and
// the Okabe–Ito palette, which stays distinguishable under colour blindness.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace pto::reporting {

// The Okabe–Ito colours, black last; series take them in order.
const std::vector<std::string>& okabe_ito();

struct Series {
  std::string name;                              // legend entry
  std::vector<std::pair<double, double>> points;  // (x, y)
  bool lines = false;                            // join the points in order (else markers only)
  int colour = -1;                               // index into okabe_ito(); -1: by position
  bool in_legend = true;                         // several lines may share one legend entry
};

struct XYPlot {
  std::string title, x_label, y_label;           // labels name their units
  bool log_x = false, log_y = false;
  bool diagonal = false;                         // y = x, for predicted against measured
  std::vector<Series> series;
};

struct Bar {
  std::string label;
  double value = 0;
  int colour = 0;
};

struct BarPlot {
  std::string title, x_label;
  double reference = 1;                          // a vertical rule (speedup 1 = no gain)
  std::vector<Bar> bars;                         // one row each, top to bottom
  std::vector<std::pair<std::string, int>> legend;  // (name, colour)
};

std::string render_svg(const XYPlot& plot);
std::string render_svg(const BarPlot& plot);

// Escapes &, <, >, " for text and attributes.
std::string xml_escape(const std::string& text);

}  // namespace pto::reporting
