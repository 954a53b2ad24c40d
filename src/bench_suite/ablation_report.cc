// The ablation's report: JSON, a three-panel SVG chart, a summary for people.
#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>

#include "kope/bench_suite/ablation.h"

namespace kope::bench_suite {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

json ToJson(const Interval& i) {
  return {{"mean", i.mean}, {"low", i.low}, {"high", i.high}, {"n", i.n}};
}

json ToJson(const AblationTaskRun& t) {
  return {{"task", t.task},
          {"family", t.family},
          {"position", t.position},
          {"known_family", t.known_family},
          {"valid", t.valid},
          {"speedup", t.speedup},
          {"attempts", t.attempts},
          {"attempts_to_own", t.attempts_to_own},
          {"attempts_to_reference", t.attempts_to_reference},
          {"speedups", t.speedups},
          {"active_tokens", t.active_tokens},
          {"passive_tokens", t.passive_tokens},
          {"proposer_tokens", t.proposer_tokens},
          {"prompt_tokens", t.prompt_tokens},
          {"completion_tokens", t.completion_tokens},
          {"cost_usd", t.cost_usd},
          {"wall_seconds", t.wall_seconds},
          {"stop_reason", t.stop_reason},
          {"error", t.error}};
}

json ToJson(const AblationReport& report, const ArmMetrics& m) {
  json fast = json::object();
  for (size_t p = 0; p < report.fast_p.size() && p < m.fast_p.size(); ++p) {
    fast[fmt::format("{}", report.fast_p[p])] = ToJson(m.fast_p[p]);
  }
  return {{"pass_rate", ToJson(m.pass_rate)},
          {"fast_p", fast},
          {"geomean_speedup", ToJson(m.geomean_speedup)},
          {"attempts_to_own", ToJson(m.attempts_to_own)},
          {"attempts_to_reference", ToJson(m.attempts_to_reference)},
          {"tokens_to_reference", ToJson(m.tokens_to_reference)},
          {"prompt_tokens", ToJson(m.prompt_tokens)},
          {"active_tokens", ToJson(m.active_tokens)},
          {"passive_tokens", ToJson(m.passive_tokens)},
          {"cost_usd", ToJson(m.cost_usd)},
          {"active_by_attempt", m.active_by_attempt},
          {"passive_by_attempt", m.passive_by_attempt}};
}

json ToJson(const AblationReport& report, const AblationArmResult& a) {
  json runs = json::array();
  for (const AblationRun& run : a.runs) {
    json tasks = json::array();
    for (const AblationTaskRun& t : run.tasks) tasks.push_back(ToJson(t));
    runs.push_back(
        {{"repetition", run.repetition}, {"wall_seconds", run.wall_seconds}, {"tasks", tasks}});
  }
  return {{"name", a.arm.name},
          {"graph", a.arm.shared_graph ? "accumulating" : "fresh per task"},
          {"order", a.arm.reverse ? "reverse" : "suite"},
          {"context", context::ContextModeName(a.arm.mode)},
          {"transfer", a.arm.transfer},
          {"metrics", ToJson(report, a.metrics)},
          {"runs", runs}};
}

std::string XmlEscape(std::string_view text) {
  std::string out;
  for (char c : text) {
    if (c == '<') {
      out += "&lt;";
    } else if (c == '>') {
      out += "&gt;";
    } else if (c == '&') {
      out += "&amp;";
    } else {
      out += c;
    }
  }
  return out;
}

constexpr const char* kColors[] = {"#3a7bd5", "#d9822b", "#4caf50", "#9c27b0"};
constexpr int kPanelW = 300, kPanelH = 220, kTop = 60, kLeft = 50;

// One bar per arm with its interval as a whisker, in panel `index`.
std::string BarPanel(const AblationReport& r, int index, const std::string& title,
                     const std::function<Interval(const ArmMetrics&)>& metric) {
  const int x0 = kLeft + index * (kPanelW + kLeft);
  double top = 0;
  for (const AblationArmResult& a : r.arms) top = std::max(top, metric(a.metrics).high);
  top = top > 0 ? top * 1.15 : 1;
  auto y = [&](double v) { return kTop + kPanelH - static_cast<int>(v / top * kPanelH); };
  std::string svg = fmt::format(
      "<text x=\"{}\" y=\"{}\" font-size=\"13\">{}</text>\n"
      "<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"#333\"/>\n",
      x0, kTop - 12, XmlEscape(title), x0, kTop + kPanelH, x0 + kPanelW, kTop + kPanelH);
  const int n = std::max<int>(1, static_cast<int>(r.arms.size()));
  const int slot = kPanelW / n;
  for (int i = 0; i < static_cast<int>(r.arms.size()); ++i) {
    const Interval v = metric(r.arms[i].metrics);
    const int bx = x0 + i * slot + slot / 6, bw = slot * 2 / 3, cx = bx + bw / 2;
    svg += fmt::format(
        "<rect x=\"{0}\" y=\"{1}\" width=\"{2}\" height=\"{3}\" fill=\"{11}\"/>\n"
        "<line x1=\"{4}\" y1=\"{5}\" x2=\"{4}\" y2=\"{6}\" stroke=\"#000\"/>\n"
        "<text x=\"{4}\" y=\"{7}\" text-anchor=\"middle\">{8:.3g}</text>\n"
        "<text x=\"{4}\" y=\"{9}\" text-anchor=\"middle\" font-size=\"11\">{10}</text>\n",
        bx, y(v.mean), bw, kTop + kPanelH - y(v.mean), cx, y(v.high), y(v.low), y(v.high) - 4,
        v.mean, kTop + kPanelH + 14, XmlEscape(r.arms[i].arm.name), kColors[i % 4]);
  }
  return svg;
}

// The mean prompt tokens per attempt index, active and passive, over every run of every arm.
std::string TokenPanel(const AblationReport& r, int index) {
  const int x0 = kLeft + index * (kPanelW + kLeft);
  std::vector<double> active, passive;
  for (const AblationArmResult& a : r.arms) {
    if (a.metrics.passive_by_attempt.size() > passive.size()) {
      active = a.metrics.active_by_attempt;
      passive = a.metrics.passive_by_attempt;
    }
  }
  double top = 1;
  for (double v : passive) top = std::max(top, v);
  for (double v : active) top = std::max(top, v);
  top *= 1.1;
  const size_t n = std::max<size_t>(2, passive.size());
  auto px = [&](size_t i) { return x0 + static_cast<int>(i * kPanelW / (n - 1)); };
  auto py = [&](double v) { return kTop + kPanelH - static_cast<int>(v / top * kPanelH); };
  std::string svg = fmt::format(
      "<text x=\"{}\" y=\"{}\" font-size=\"13\">prompt tokens per attempt (max {:.0f})</text>\n"
      "<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"#333\"/>\n"
      "<text x=\"{}\" y=\"{}\" font-size=\"11\">attempt 1 .. {}</text>\n",
      x0, kTop - 12, top / 1.1, x0, kTop + kPanelH, x0 + kPanelW, kTop + kPanelH, x0,
      kTop + kPanelH + 14, passive.size());
  const std::pair<const std::vector<double>*, const char*> lines[] = {{&passive, "passive"},
                                                                      {&active, "active"}};
  int k = 0;
  for (const auto& [series, name] : lines) {
    std::string points;
    for (size_t i = 0; i < series->size(); ++i) {
      points += fmt::format("{},{} ", px(i), py((*series)[i]));
    }
    svg += fmt::format(
        "<polyline fill=\"none\" stroke=\"{}\" stroke-width=\"2\" points=\"{}\"/>\n"
        "<text x=\"{}\" y=\"{}\" fill=\"{}\">{}</text>\n",
        kColors[k + 1], points, x0 + 8, kTop + 14 + 16 * k, kColors[k + 1], name);
    ++k;
  }
  return svg;
}

AblationTaskRun TaskRunFromJson(const json& j) {
  AblationTaskRun t;
  t.task = j.at("task");
  t.family = j.at("family");
  t.position = j.at("position");
  t.known_family = j.at("known_family");
  t.valid = j.at("valid");
  t.speedup = j.at("speedup");
  t.attempts = j.at("attempts");
  t.speedups = j.at("speedups").get<std::vector<double>>();
  t.active_tokens = j.at("active_tokens").get<std::vector<int64_t>>();
  t.passive_tokens = j.at("passive_tokens").get<std::vector<int64_t>>();
  t.proposer_tokens = j.value("proposer_tokens", std::vector<int64_t>(t.speedups.size(), 0));
  t.prompt_tokens = j.at("prompt_tokens");
  t.completion_tokens = j.at("completion_tokens");
  t.cost_usd = j.at("cost_usd");
  t.wall_seconds = j.at("wall_seconds");
  t.stop_reason = j.at("stop_reason");
  t.error = j.at("error");
  return t;
}

AblationArmResult ArmFromJson(const json& j, size_t tasks) {
  AblationArmResult a;
  a.arm.name = j.at("name");
  a.arm.shared_graph = j.at("graph") == "accumulating";
  a.arm.reverse = j.at("order") == "reverse";
  a.arm.mode =
      j.at("context") == "passive" ? context::ContextMode::kPassive : context::ContextMode::kActive;
  a.arm.transfer = j.at("transfer");
  for (const json& r : j.at("runs")) {
    AblationRun run;
    run.repetition = r.at("repetition");
    run.wall_seconds = r.at("wall_seconds");
    bool whole = r.at("tasks").size() == tasks;
    for (const json& t : r.at("tasks")) {
      run.tasks.push_back(TaskRunFromJson(t));
      whole = whole && run.tasks.back().stop_reason != "cancelled";
    }
    if (whole) a.runs.push_back(std::move(run));
  }
  return a;
}

std::string Cell(const Interval& i, const char* format) {
  if (i.n == 0) return "-";
  if (i.n < 2) return fmt::format(fmt::runtime(format), i.mean);
  return fmt::format(fmt::runtime(std::string(format) + " [" + format + ", " + format + "]"),
                     i.mean, i.low, i.high);
}

}  // namespace

std::string AblationReportToJson(const AblationReport& r, int indent) {
  json arms = json::array();
  for (const AblationArmResult& a : r.arms) arms.push_back(ToJson(r, a));
  json targets = json::array();
  for (const TargetCheck& t : r.targets) {
    targets.push_back(
        {{"name", t.name}, {"evaluated", t.evaluated}, {"met", t.met}, {"detail", t.detail}});
  }
  json out = {{"suite", r.suite},
              {"factor", AblationFactorName(r.factor)},
              {"tasks", r.tasks},
              {"proposer", r.proposer},
              {"backend", r.backend},
              {"device", r.device},
              {"date", r.date},
              {"wall_seconds", r.wall_seconds},
              {"repeat", r.repeat},
              {"attempts_budget", r.attempts_budget},
              {"context_budget_tokens", r.context_budget_tokens},
              {"fraction", r.fraction},
              {"fast_p", r.fast_p},
              {"imports", r.imports},
              {"arms", arms},
              {"targets", targets}};
  return out.dump(indent);
}

Result<AblationReport> AblationReportFromJson(std::string_view text) {
  try {
    const json j = json::parse(text);
    AblationReport r;
    r.suite = j.at("suite");
    KOPE_ASSIGN_OR_RETURN(r.factor, ParseAblationFactor(j.at("factor").get<std::string>()));
    r.tasks = j.at("tasks").get<std::vector<std::string>>();
    r.proposer = j.at("proposer");
    r.backend = j.at("backend");
    r.device = j.at("device");
    r.date = j.at("date");
    r.wall_seconds = j.at("wall_seconds");
    r.repeat = j.at("repeat");
    r.attempts_budget = j.at("attempts_budget");
    r.context_budget_tokens = j.at("context_budget_tokens");
    r.fraction = j.at("fraction");
    r.fast_p = j.at("fast_p").get<std::vector<double>>();
    r.imports = j.at("imports").get<std::vector<std::string>>();
    for (const json& a : j.at("arms")) r.arms.push_back(ArmFromJson(a, r.tasks.size()));
    ComputeAblationMetrics(r);
    return r;
  } catch (const json::exception& e) {
    return Status::InvalidArgument(std::string("not an ablation report: ") + e.what());
  }
}

std::string AblationChartSvg(const AblationReport& r) {
  const int width = 3 * (kPanelW + kLeft) + 20, height = kTop + kPanelH + 50;
  std::string svg = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" "
      "font-family=\"sans-serif\" font-size=\"12\">\n"
      "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
      "<text x=\"8\" y=\"20\" font-size=\"14\">{} ablation on {}: {} repetitions, {} attempts per "
      "task; {} on {} (bars: mean, whiskers: 95% interval)</text>\n",
      width, height, AblationFactorName(r.factor), XmlEscape(r.suite), r.repeat, r.attempts_budget,
      XmlEscape(r.proposer), XmlEscape(r.device));
  svg += BarPanel(
      r, 0, fmt::format("attempts to {:.0f}% of the run's best (mean per task)", 100 * r.fraction),
      [](const ArmMetrics& m) { return m.attempts_to_own; });
  svg += BarPanel(r, 1, "geomean speedup (valid tasks)",
                  [](const ArmMetrics& m) { return m.geomean_speedup; });
  svg += TokenPanel(r, 2);
  return svg + "</svg>\n";
}

std::string FormatAblationSummary(const AblationReport& r) {
  std::string s =
      fmt::format("{} ablation on suite {} ({} tasks) | proposer {} | {} {} | {} repetitions\n",
                  AblationFactorName(r.factor), r.suite, r.tasks.size(), r.proposer, r.backend,
                  r.device, r.repeat);
  s += fmt::format("  {:<19} {:<22} {:<22} {:<22} {:<24} {}\n", "arm", "pass rate",
                   "geomean speedup", "attempts to 90%", "prompt tokens", "fast_p");
  for (const AblationArmResult& a : r.arms) {
    const ArmMetrics& m = a.metrics;
    std::string fast;
    for (size_t p = 0; p < r.fast_p.size() && p < m.fast_p.size(); ++p) {
      fast += fmt::format("{}{}:{:.2f}", p ? " " : "", r.fast_p[p], m.fast_p[p].mean);
    }
    s += fmt::format("  {:<19} {:<22} {:<22} {:<22} {:<24} {}\n", a.arm.name,
                     Cell(m.pass_rate, "{:.2f}"), Cell(m.geomean_speedup, "{:.2f}"),
                     Cell(m.attempts_to_own, "{:.1f}"), Cell(m.prompt_tokens, "{:.0f}"), fast);
  }
  for (const TargetCheck& t : r.targets) {
    if (!t.evaluated) continue;
    s += fmt::format("target {}: {} ({})\n", t.name, t.met ? "met" : "NOT met", t.detail);
  }
  return s;
}

Status WriteAblationReport(const AblationReport& report, const fs::path& out_dir) {
  std::error_code ec;
  fs::create_directories(out_dir, ec);
  if (ec) return Status::IoError("cannot create " + out_dir.string() + ": " + ec.message());
  const std::pair<const char*, std::string> files[] = {
      {"ablation.json", AblationReportToJson(report) + "\n"},
      {"ablation.svg", AblationChartSvg(report)}};
  for (const auto& [name, text] : files) {
    std::ofstream out(out_dir / name, std::ios::binary | std::ios::trunc);
    out << text;
    if (!out.flush()) return Status::IoError("cannot write " + (out_dir / name).string());
  }
  return Status::Ok();
}

}  // namespace kope::bench_suite
