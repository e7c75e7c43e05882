#include "reporting/svg_plot.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/format_number.h"

namespace pto::reporting {
namespace {

constexpr double kWidth = 720, kHeight = 420;
constexpr double kLeft = 80, kTop = 40, kBottom = 60, kLegendWidth = 170;
constexpr double kCharWidth = 7;  // at font-size 12, generous for sans-serif

std::string num(double v) { return format_number("%.1f", v); }

// "0.5", "2", "1e+04": short tick labels.
std::string tick_label(double v) { return format_number("%.3g", v); }

std::string text(double x, double y, const std::string& s, const std::string& anchor = "middle",
                 const std::string& extra = "") {
  return "<text x=\"" + num(x) + "\" y=\"" + num(y) + "\" text-anchor=\"" + anchor + "\"" + extra + ">" +
         xml_escape(s) + "</text>\n";
}

std::string line(double x1, double y1, double x2, double y2, const std::string& style) {
  return "<line x1=\"" + num(x1) + "\" y1=\"" + num(y1) + "\" x2=\"" + num(x2) + "\" y2=\"" + num(y2) + "\" " +
         style + "/>\n";
}

std::string svg_open(double width, double height, const std::string& title) {
  return "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"plot\" width=\"" + num(width) + "\" height=\"" +
         num(height) + "\" viewBox=\"0 0 " + num(width) + " " + num(height) +
         "\" font-family=\"sans-serif\" font-size=\"12\" role=\"img\" aria-label=\"" + xml_escape(title) + "\">\n" +
         text(width / 2, 22, title, "middle", " font-size=\"15\" font-weight=\"bold\"");
}

// One axis: maps data to pixels and chooses ticks (powers of ten on a log axis, 1-2-5
// steps on a linear one), no more than fit without their labels touching.
struct Axis {
  double lo = 0, hi = 1;
  bool log = false;
  double from = 0, to = 1;  // pixels

  double t(double v) const { return log ? std::log10(v) : v; }
  double px(double v) const { return from + (t(v) - t(lo)) / (t(hi) - t(lo)) * (to - from); }

  std::vector<double> ticks(int max_ticks) const {
    std::vector<double> out;
    if (log) {
      const int a = static_cast<int>(std::floor(std::log10(lo))), b = static_cast<int>(std::ceil(std::log10(hi)));
      const int step = std::max(1, (b - a + max_ticks - 1) / max_ticks);
      for (int e = a; e <= b; e += step)
        if (double v = std::pow(10.0, e); v >= lo * 0.999 && v <= hi * 1.001) out.push_back(v);
      return out;
    }
    const double raw = (hi - lo) / max_ticks, mag = std::pow(10.0, std::floor(std::log10(raw)));
    double step = mag;
    for (double m : {1.0, 2.0, 5.0, 10.0})
      if (m * mag >= raw) { step = m * mag; break; }
    for (double v = std::ceil(lo / step) * step; v <= hi + step * 1e-9; v += step) out.push_back(std::abs(v) < step * 1e-9 ? 0 : v);
    return out;
  }
};

// Widens [lo, hi] a little (a decade-aligned range on a log axis) so that points do
// not sit on the frame.
void pad(Axis& a) {
  if (a.log) {
    a.lo = std::pow(10.0, std::floor(std::log10(a.lo) + 1e-9));
    a.hi = std::pow(10.0, std::ceil(std::log10(a.hi) - 1e-9));
    if (a.hi <= a.lo) a.hi = a.lo * 10;
    return;
  }
  const double span = a.hi > a.lo ? a.hi - a.lo : std::max(1.0, std::abs(a.hi));
  a.lo -= span * 0.05, a.hi += span * 0.05;
}

enum class Key { Marker, Line, Dashed, Box };

struct LegendEntry {
  std::string name;
  int colour = 0;
  Key key = Key::Marker;
};

// Entries stacked to the right of the plot area, each with a sample of how it is drawn.
std::string legend(const std::vector<LegendEntry>& entries, double x, double y) {
  std::string out;
  for (const LegendEntry& e : entries) {
    const std::string& c = okabe_ito()[e.colour % okabe_ito().size()];
    switch (e.key) {
      case Key::Marker: out += "<circle cx=\"" + num(x + 7) + "\" cy=\"" + num(y - 4) + "\" r=\"4\" fill=\"" + c + "\"/>\n"; break;
      case Key::Line: out += line(x, y - 4, x + 14, y - 4, "stroke=\"" + c + "\" stroke-width=\"2\""); break;
      case Key::Dashed: out += line(x, y - 4, x + 14, y - 4, "stroke=\"#888\" stroke-dasharray=\"4 2\""); break;
      case Key::Box: out += "<rect x=\"" + num(x) + "\" y=\"" + num(y - 10) + "\" width=\"12\" height=\"12\" fill=\"" + c + "\"/>\n"; break;
    }
    out += text(x + 20, y, e.name, "start");
    y += 18;
  }
  return out;
}

std::string frame(double x0, double y0, double x1, double y1) {
  return "<rect x=\"" + num(x0) + "\" y=\"" + num(y0) + "\" width=\"" + num(x1 - x0) + "\" height=\"" + num(y1 - y0) +
         "\" fill=\"none\" stroke=\"#444\"/>\n";
}

}  // namespace

const std::vector<std::string>& okabe_ito() {
  static const std::vector<std::string> colours = {"#0072B2", "#E69F00", "#009E73", "#CC79A7",
                                                   "#56B4E9", "#D55E00", "#F0E442", "#000000"};
  return colours;
}

std::string xml_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string render_svg(const XYPlot& p) {
  Axis x{std::numeric_limits<double>::max(), std::numeric_limits<double>::lowest(), p.log_x, kLeft,
         kWidth - kLegendWidth - 20};
  Axis y{std::numeric_limits<double>::max(), std::numeric_limits<double>::lowest(), p.log_y, kHeight - kBottom, kTop};
  for (const Series& s : p.series)
    for (const auto& [px, py] : s.points) {
      if ((p.log_x && px <= 0) || (p.log_y && py <= 0)) continue;
      x.lo = std::min(x.lo, px), x.hi = std::max(x.hi, px), y.lo = std::min(y.lo, py), y.hi = std::max(y.hi, py);
    }
  if (x.lo > x.hi) x.lo = y.lo = 1, x.hi = y.hi = 10;  // nothing to show: an empty frame
  if (p.diagonal) x.lo = y.lo = std::min(x.lo, y.lo), x.hi = y.hi = std::max(x.hi, y.hi);
  pad(x), pad(y);
  std::string out = svg_open(kWidth, kHeight, p.title);
  out += frame(x.from, y.to, x.to, y.from);
  const int x_ticks = static_cast<int>((x.to - x.from) / 70), y_ticks = static_cast<int>((y.from - y.to) / 40);
  for (double v : x.ticks(x_ticks)) {
    out += line(x.px(v), y.from, x.px(v), y.from + 5, "stroke=\"#444\"");
    out += line(x.px(v), y.from, x.px(v), y.to, "stroke=\"#ddd\"");
    out += text(x.px(v), y.from + 18, tick_label(v));
  }
  for (double v : y.ticks(y_ticks)) {
    out += line(x.from - 5, y.px(v), x.from, y.px(v), "stroke=\"#444\"");
    out += line(x.from, y.px(v), x.to, y.px(v), "stroke=\"#ddd\"");
    out += text(x.from - 8, y.px(v) + 4, tick_label(v), "end");
  }
  out += text((x.from + x.to) / 2, kHeight - 18, p.x_label);
  out += text(18, (y.from + y.to) / 2, p.y_label, "middle",
              " transform=\"rotate(-90 18 " + num((y.from + y.to) / 2) + ")\"");
  if (p.diagonal)
    out += line(x.px(x.lo), y.px(x.lo), x.px(x.hi), y.px(x.hi), "stroke=\"#888\" stroke-dasharray=\"6 4\"");
  std::vector<LegendEntry> entries;
  for (size_t i = 0; i < p.series.size(); ++i) {
    const Series& s = p.series[i];
    const int colour = s.colour >= 0 ? s.colour : static_cast<int>(i);
    const std::string& c = okabe_ito()[colour % okabe_ito().size()];
    if (s.in_legend) entries.push_back({s.name, colour, s.lines ? Key::Line : Key::Marker});
    std::string path;
    for (const auto& [px, py] : s.points) {
      if ((p.log_x && px <= 0) || (p.log_y && py <= 0)) continue;
      if (s.lines) {
        path += (path.empty() ? "M" : " L") + num(x.px(px)) + " " + num(y.px(py));
      } else {
        out += "<circle cx=\"" + num(x.px(px)) + "\" cy=\"" + num(y.px(py)) + "\" r=\"3\" fill=\"" + c +
               "\" fill-opacity=\"0.7\"/>\n";
      }
    }
    if (!path.empty()) out += "<path d=\"" + path + "\" fill=\"none\" stroke=\"" + c + "\" stroke-width=\"2\"/>\n";
  }
  if (p.diagonal) entries.push_back({"y = x (perfect model)", 7, Key::Dashed});
  out += legend(entries, x.to + 20, kTop + 14);
  return out + "</svg>\n";
}

std::string render_svg(const BarPlot& p) {
  size_t widest = 0;
  for (const Bar& b : p.bars) widest = std::max(widest, b.label.size());
  const double left = 20 + kCharWidth * static_cast<double>(widest), row = 22;
  const double height = kTop + 10 + row * static_cast<double>(std::max<size_t>(p.bars.size(), 1)) + kBottom;
  const double width = left + 440 + kLegendWidth + 20;  // the bars keep 440 px whatever the labels
  Axis x{0, p.reference, false, left, width - kLegendWidth - 20};
  for (const Bar& b : p.bars) x.hi = std::max(x.hi, b.value);
  x.hi *= 1.08;
  const double top = kTop + 10, bottom = height - kBottom;
  std::string out = svg_open(width, height, p.title);
  out += frame(x.from, top, x.to, bottom);
  for (double v : x.ticks(static_cast<int>((x.to - x.from) / 70))) {
    out += line(x.px(v), bottom, x.px(v), bottom + 5, "stroke=\"#444\"");
    out += line(x.px(v), top, x.px(v), bottom, "stroke=\"#ddd\"");
    out += text(x.px(v), bottom + 18, tick_label(v));
  }
  double yy = top;
  for (const Bar& b : p.bars) {
    const std::string& c = okabe_ito()[b.colour % okabe_ito().size()];
    out += "<rect x=\"" + num(x.from) + "\" y=\"" + num(yy + 4) + "\" width=\"" + num(x.px(b.value) - x.from) +
           "\" height=\"" + num(row - 8) + "\" fill=\"" + c + "\"><title>" + xml_escape(b.label) + ": " +
           tick_label(b.value) + "</title></rect>\n";
    out += text(x.from - 6, yy + row / 2 + 4, b.label, "end");
    yy += row;
  }
  out += line(x.px(p.reference), top, x.px(p.reference), bottom, "stroke=\"#000\" stroke-dasharray=\"4 3\"");
  out += text((x.from + x.to) / 2, height - 18, p.x_label);
  std::vector<LegendEntry> entries;
  for (const auto& [name, colour] : p.legend) entries.push_back({name, colour, Key::Box});
  out += legend(entries, x.to + 20, top + 14);
  return out + "</svg>\n";
}

}  // namespace pto::reporting
