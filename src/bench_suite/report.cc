#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>

#include "kope/agent/progress.h"
#include "kope/bench_suite/suite.h"

namespace kope::bench_suite {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

json Optional(const std::optional<double>& v) { return v ? json(*v) : json(nullptr); }

std::string CsvField(const std::string& text) {
  if (text.find_first_of(",\"\n") == std::string::npos) return text;
  std::string out = "\"";
  for (char c : text) {
    if (c == '"') out += '"';
    out += c == '\n' ? ' ' : c;
  }
  return out + "\"";
}

std::string XmlEscape(std::string_view text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '&':
        out += "&amp;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

Status WriteText(const fs::path& path, const std::string& text) {
  const fs::path tmp = path.string() + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << text;
    if (!out.flush()) return Status::IoError("cannot write " + tmp.string());
  }
  std::error_code ec;
  fs::rename(tmp, path, ec);
  if (ec) return Status::IoError("cannot rename " + tmp.string() + ": " + ec.message());
  return Status::Ok();
}

// Each language's figures, from every task's attempts and best kernel.
std::vector<LanguageMetrics> LanguageFigures(const std::vector<TaskResult>& tasks) {
  std::vector<LanguageMetrics> out;
  std::vector<double> log_sums;
  auto entry = [&](const std::string& language) -> size_t {
    for (size_t i = 0; i < out.size(); ++i) {
      if (out[i].language == language) return i;
    }
    LanguageMetrics fresh;
    fresh.language = language;
    out.push_back(std::move(fresh));
    log_sums.push_back(0);
    return out.size() - 1;
  };
  for (const TaskResult& t : tasks) {
    if (!t.report) continue;
    for (const agent::LanguageResult& r : agent::ResultsByLanguage(t.report->attempts)) {
      const size_t i = entry(r.language);
      out[i].attempts += r.attempts;
      out[i].valid_attempts += r.valid;
      if (!r.best_speedup) continue;
      out[i].tasks_passed++;
      out[i].best_speedup = std::max(out[i].best_speedup, *r.best_speedup);
      log_sums[i] += std::log(*r.best_speedup);
    }
    if (t.valid()) out[entry(t.report->best->language)].tasks_won++;
  }
  for (size_t i = 0; i < out.size(); ++i) {
    if (out[i].tasks_passed > 0)
      out[i].geomean_speedup = std::exp(log_sums[i] / out[i].tasks_passed);
  }
  return out;
}

json LanguagesJson(const std::vector<LanguageMetrics>& languages) {
  json out = json::array();
  for (const LanguageMetrics& l : languages) {
    out.push_back({{"language", l.language},
                   {"attempts", l.attempts},
                   {"valid_attempts", l.valid_attempts},
                   {"tasks_passed", l.tasks_passed},
                   {"tasks_won", l.tasks_won},
                   {"best_speedup", l.best_speedup},
                   {"geomean_speedup", l.geomean_speedup}});
  }
  return out;
}

}  // namespace

SuiteMetrics ComputeMetrics(const std::vector<TaskResult>& tasks) {
  SuiteMetrics m;
  m.tasks = static_cast<int>(tasks.size());
  double log_valid = 0, log_all = 0, roofline = 0, baseline_roofline = 0;
  int fast1 = 0, fast15 = 0, fast2 = 0;
  for (const TaskResult& t : tasks) {
    if (t.report) {
      m.attempts += static_cast<int>(t.report->attempts.size());
      m.prompt_tokens += t.report->prompt_tokens;
      m.completion_tokens += t.report->completion_tokens;
      m.cost_usd += t.report->cost_usd;
    }
    if (!t.valid()) continue;
    const double s = t.speedup();
    m.valid++;
    log_valid += std::log(s);
    log_all += std::log(s);
    fast1 += s > 1.0 ? 1 : 0;
    fast15 += s > 1.5 ? 1 : 0;
    fast2 += s > 2.0 ? 1 : 0;
    if (t.report->best->roofline) {
      roofline += *t.report->best->roofline;
      baseline_roofline += t.report->baseline_roofline;
      m.roofline_tasks++;
    }
  }
  if (m.tasks > 0) {
    m.pass_rate = static_cast<double>(m.valid) / m.tasks;
    m.fast_1_0 = static_cast<double>(fast1) / m.tasks;
    m.fast_1_5 = static_cast<double>(fast15) / m.tasks;
    m.fast_2_0 = static_cast<double>(fast2) / m.tasks;
    m.geomean_speedup_all = std::exp(log_all / m.tasks);
  }
  if (m.valid > 0) m.geomean_speedup = std::exp(log_valid / m.valid);
  if (m.roofline_tasks > 0) {
    m.mean_roofline = roofline / m.roofline_tasks;
    m.mean_baseline_roofline = baseline_roofline / m.roofline_tasks;
  }
  m.languages = LanguageFigures(tasks);
  return m;
}

std::string SuiteReportToJson(const SuiteReport& r, int indent) {
  const SuiteMetrics& m = r.metrics;
  json metrics = {{"tasks", m.tasks},
                  {"valid", m.valid},
                  {"pass_rate", m.pass_rate},
                  {"fast_p", {{"1.0", m.fast_1_0}, {"1.5", m.fast_1_5}, {"2.0", m.fast_2_0}}},
                  {"geomean_speedup", m.geomean_speedup},
                  {"geomean_speedup_all", m.geomean_speedup_all},
                  {"mean_roofline", Optional(m.mean_roofline)},
                  {"mean_baseline_roofline", Optional(m.mean_baseline_roofline)},
                  {"roofline_tasks", m.roofline_tasks},
                  {"attempts", m.attempts},
                  {"prompt_tokens", m.prompt_tokens},
                  {"completion_tokens", m.completion_tokens},
                  {"tokens", m.prompt_tokens + m.completion_tokens},
                  {"cost_usd", m.cost_usd},
                  {"languages", LanguagesJson(m.languages)}};
  json tasks = json::array();
  for (const TaskResult& t : r.tasks) {
    json task = {{"name", t.name},     {"family", t.family}, {"dir", t.dir.string()},
                 {"status", t.status}, {"error", t.error},   {"valid", t.valid()}};
    task["speedup"] = t.valid() ? json(t.speedup()) : json(nullptr);
    if (t.report) task["episode"] = json::parse(agent::EpisodeReportToJson(*t.report, -1));
    tasks.push_back(task);
  }
  json j = {{"suite", r.name},
            {"dir", r.dir.string()},
            {"proposer", r.proposer},
            {"backend", r.backend},
            {"device", r.device},
            {"date", r.date},
            {"wall_seconds", r.wall_seconds},
            {"metrics", metrics},
            {"tasks", tasks}};
  return j.dump(indent);
}

std::string SuiteReportToCsv(const SuiteReport& r) {
  std::string out =
      "task,family,status,valid,speedup,roofline,baseline_roofline,attempts,valid_attempts,"
      "prompt_tokens,completion_tokens,cost_usd,stop_reason,best_attempt,run,best_language,"
      "error\n";
  for (const TaskResult& t : r.tasks) {
    const agent::EpisodeReport* e = t.report ? &*t.report : nullptr;
    const bool has_roofline = t.valid() && e->best->roofline.has_value();
    out += fmt::format(
        "{},{},{},{},{},{},{},{},{},{},{},{:.6f},{},{},{},{},{}\n", CsvField(t.name),
        CsvField(t.family), t.status, t.valid() ? 1 : 0,
        t.valid() ? fmt::format("{:.4f}", t.speedup()) : "",
        has_roofline ? fmt::format("{:.4f}", *e->best->roofline) : "",
        has_roofline ? fmt::format("{:.4f}", e->baseline_roofline) : "", e ? e->attempts.size() : 0,
        e ? e->valid_attempts : 0, e ? e->prompt_tokens : 0, e ? e->completion_tokens : 0,
        e ? e->cost_usd : 0.0, e ? e->stop_reason : "",
        e && e->best ? fmt::format("a{}", e->best->id) : "", e ? fmt::format("r{}", e->run_id) : "",
        t.valid() ? e->best->language : "", CsvField(t.error));
  }
  return out;
}

std::string SpeedupChartSvg(const SuiteReport& r) {
  const int label_w = 150, bar_w = 480, row_h = 24, top = 48;
  const int height = top + row_h * static_cast<int>(r.tasks.size()) + 40;
  const int width = label_w + bar_w + 90;
  double max_speedup = 2.5;
  for (const TaskResult& t : r.tasks) max_speedup = std::max(max_speedup, t.speedup());
  // Log scale from 0.25x to the largest speedup.
  const double lo = std::log(0.25), hi = std::log(max_speedup * 1.1);
  auto x = [&](double s) {
    const double v = (std::log(std::max(s, 0.25)) - lo) / (hi - lo);
    return label_w + static_cast<int>(v * bar_w);
  };
  std::string svg = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" "
      "font-family=\"sans-serif\" font-size=\"12\">\n"
      "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
      "<text x=\"8\" y=\"18\" font-size=\"14\">{}: best speedup over the baseline per task "
      "(log scale)</text>\n"
      "<text x=\"8\" y=\"36\" fill=\"#555\">pass rate {:.0f}%, fast_1.0 {:.0f}%, fast_1.5 "
      "{:.0f}%, fast_2.0 {:.0f}%, geomean {:.2f}x; {} on {}</text>\n",
      width, height, XmlEscape(r.name), 100 * r.metrics.pass_rate, 100 * r.metrics.fast_1_0,
      100 * r.metrics.fast_1_5, 100 * r.metrics.fast_2_0, r.metrics.geomean_speedup,
      XmlEscape(r.proposer), XmlEscape(r.device));
  const int bottom = top + row_h * static_cast<int>(r.tasks.size());
  for (double p : {1.0, 1.5, 2.0}) {
    svg += fmt::format(
        "<line x1=\"{0}\" y1=\"{1}\" x2=\"{0}\" y2=\"{2}\" stroke=\"#999\" "
        "stroke-dasharray=\"4 3\"/><text x=\"{0}\" y=\"{3}\" text-anchor=\"middle\" "
        "fill=\"#555\">{4}x</text>\n",
        x(p), top - 4, bottom, bottom + 16, p);
  }
  int row = 0;
  for (const TaskResult& t : r.tasks) {
    const int y = top + row_h * row++;
    svg += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>\n", label_w - 6,
                       y + 16, XmlEscape(t.name));
    if (!t.valid()) {
      svg += fmt::format("<text x=\"{}\" y=\"{}\" fill=\"#b00\">no valid kernel</text>\n",
                         label_w + 4, y + 16);
      continue;
    }
    const double s = t.speedup();
    const int x0 = x(1.0), x1 = x(s);
    svg += fmt::format(
        "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{}\"/>"
        "<text x=\"{}\" y=\"{}\">{:.2f}x</text>\n",
        std::min(x0, x1), y + 4, std::max(1, std::abs(x1 - x0)), row_h - 8,
        s >= 1.0 ? "#3a7bd5" : "#d9822b", std::max(x0, x1) + 4, y + 16, s);
  }
  return svg + "</svg>\n";
}

std::string FormatSuiteSummary(const SuiteReport& r) {
  const SuiteMetrics& m = r.metrics;
  std::string s = fmt::format("suite {} ({} tasks) | proposer {} | {} {}\n", r.name, m.tasks,
                              r.proposer, r.backend, r.device);
  s += fmt::format("  {:<16} {:<12} {:<9} {:>9} {:>9} {:>8}  {}\n", "task", "family", "status",
                   "speedup", "roofline", "attempts", "stopped");
  for (const TaskResult& t : r.tasks) {
    const agent::EpisodeReport* e = t.report ? &*t.report : nullptr;
    s += fmt::format(
        "  {:<16} {:<12} {:<9} {:>9} {:>9} {:>8}  {}\n", t.name, t.family, t.status,
        t.valid() ? fmt::format("{:.2f}x", t.speedup()) : "-",
        t.valid() && e->best->roofline ? fmt::format("{:.1f}%", 100 * *e->best->roofline) : "-",
        e ? std::to_string(e->attempts.size()) : "-", e ? e->stop_reason : t.error);
  }
  s += fmt::format(
      "pass rate {:.1f}% | fast_1.0 {:.1f}% | fast_1.5 {:.1f}% | fast_2.0 {:.1f}% | geomean "
      "{:.2f}x (all tasks {:.2f}x)",
      100 * m.pass_rate, 100 * m.fast_1_0, 100 * m.fast_1_5, 100 * m.fast_2_0, m.geomean_speedup,
      m.geomean_speedup_all);
  if (m.mean_roofline) {
    s += fmt::format(" | roofline {:.1f}% (baselines {:.1f}%)", 100 * *m.mean_roofline,
                     100 * m.mean_baseline_roofline.value_or(0));
  }
  s += fmt::format(" | {} attempts | {} tokens", m.attempts, m.prompt_tokens + m.completion_tokens);
  if (m.cost_usd > 0) s += fmt::format(" | ${:.4f}", m.cost_usd);
  s += "\n";
  if (m.languages.size() > 1) {
    for (const LanguageMetrics& l : m.languages) {
      s += fmt::format(
          "  {:<7} passed {} of {} tasks, best kernel of {} | best {:.2f}x, geomean {:.2f}x | {} "
          "attempts ({} valid)\n",
          l.language, l.tasks_passed, m.tasks, l.tasks_won, l.best_speedup, l.geomean_speedup,
          l.attempts, l.valid_attempts);
    }
  }
  return s;
}

Status WriteSuiteReport(const SuiteReport& report, const fs::path& out_dir) {
  std::error_code ec;
  fs::create_directories(out_dir, ec);
  if (ec) return Status::IoError("cannot create " + out_dir.string() + ": " + ec.message());
  KOPE_RETURN_IF_ERROR(WriteText(out_dir / "report.json", SuiteReportToJson(report) + "\n"));
  KOPE_RETURN_IF_ERROR(WriteText(out_dir / "report.csv", SuiteReportToCsv(report)));
  return WriteText(out_dir / "speedup.svg", SpeedupChartSvg(report));
}

}  // namespace kope::bench_suite
