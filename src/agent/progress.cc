#include "kope/agent/progress.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <nlohmann/json.hpp>

namespace kope::agent {
namespace {

using json = nlohmann::json;

std::string Shorten(std::string_view text, size_t max) {
  std::string line(text.substr(0, text.find('\n')));
  if (line.size() > max) line = line.substr(0, max - 3) + "...";
  return line;
}

std::string Tokens(int64_t tokens) {
  if (tokens >= 1000000) return fmt::format("{:.1f}M", static_cast<double>(tokens) / 1e6);
  if (tokens >= 1000) return fmt::format("{:.1f}k", static_cast<double>(tokens) / 1e3);
  return std::to_string(tokens);
}

std::string Duration(double seconds) {
  const int s = static_cast<int>(seconds + 0.5);
  if (s >= 3600) return fmt::format("{}h{:02}m", s / 3600, s / 60 % 60);
  if (s >= 60) return fmt::format("{}m{:02}s", s / 60, s % 60);
  return fmt::format("{}s", s);
}

std::string Ref(memory::NodeId id) { return id == 0 ? "-" : fmt::format("a{}", id); }

class ProgressDisplay : public EpisodeObserver {
 public:
  ProgressDisplay(std::ostream& out, ProgressOptions options)
      : out_(out), options_(std::move(options)) {}

  void OnStart(const EpisodeReport& state) override {
    Print(fmt::format(
        "{} run r{} of {} ({}) on {} {}{}, proposer {}", state.resumed ? "resuming" : "starting",
        state.run_id, state.task, state.family, state.backend, state.device,
        state.resumed ? fmt::format(" ({} attempts recorded)", state.attempts.size()) : "",
        state.proposer));
  }

  void OnActivity(std::string_view line) override {
    activity_ = Shorten(line, 70);
    if (!options_.terminal) return;
    const auto now = std::chrono::steady_clock::now();
    if (now - last_draw_ < std::chrono::milliseconds(100)) return;
    last_draw_ = now;
    Draw();
  }

  void OnAttempt(const AttemptEvent& e) override {
    used_ = e.attempts_used;
    budget_ = e.attempts_budget;
    best_ = e.best_speedup;
    tokens_ = e.tokens;
    elapsed_ = e.elapsed_seconds;
    left_ = e.seconds_left;
    std::string line = FormatAttemptLine(e.attempt);
    if (e.confirmation) line = "  confirm " + line;
    line += fmt::format(" | best {} | attempt {}/{} | {} tokens | {}",
                        best_ ? fmt::format("{:.2f}x", *best_) : "-", used_, budget_,
                        Tokens(tokens_), Duration(elapsed_));
    if (e.new_best) line += " *";
    activity_.clear();
    Print(line);
  }

  void OnFinish(const EpisodeReport& report) override {
    (void)report;
    if (!options_.terminal) return;
    std::unique_lock<std::mutex> lock = Lock();
    out_ << "\r\033[K" << std::flush;
  }

 private:
  std::unique_lock<std::mutex> Lock() {
    return options_.lock != nullptr ? std::unique_lock<std::mutex>(*options_.lock)
                                    : std::unique_lock<std::mutex>();
  }

  void Print(const std::string& line) {
    std::unique_lock<std::mutex> lock = Lock();
    if (options_.terminal) out_ << "\r\033[K";
    out_ << options_.prefix << line << "\n";
    if (options_.terminal) out_ << StatusLine();
    out_ << std::flush;
  }

  void Draw() {
    std::unique_lock<std::mutex> lock = Lock();
    out_ << "\r\033[K" << StatusLine() << std::flush;
  }

  std::string StatusLine() const {
    std::string s =
        fmt::format("{}attempt {}/{} · best {} · {} tokens · ", options_.prefix, used_, budget_,
                    best_ ? fmt::format("{:.2f}x", *best_) : "-", Tokens(tokens_));
    s += left_ >= 0 ? Duration(left_) + " left" : Duration(elapsed_) + " elapsed";
    if (!activity_.empty()) s += " · " + activity_;
    return Shorten(s, 150);
  }

  std::ostream& out_;
  ProgressOptions options_;
  std::string activity_;
  std::chrono::steady_clock::time_point last_draw_;
  int used_ = 0;
  int budget_ = 0;
  std::optional<double> best_;
  int64_t tokens_ = 0;
  double elapsed_ = 0;
  double left_ = -1;
};

json AttemptJson(const AttemptSummary& a) {
  json j = {{"id", a.id},
            {"parent", a.parent_id == 0 ? json(nullptr) : json(a.parent_id)},
            {"run", a.run_id},
            {"proposer", a.proposer},
            {"language", a.language},
            {"decision", a.decision},
            {"classes", a.classes},
            {"source_hash", a.source_hash},
            {"verdict", a.verdict},
            {"message", a.message},
            {"flags", a.flags},
            {"flagged", a.flagged},
            {"confirmed", a.confirmed},
            {"tokens", a.tokens}};
  j["speedup"] = a.speedup ? json(*a.speedup) : json(nullptr);
  j["roofline"] = a.roofline ? json(*a.roofline) : json(nullptr);
  j["time_ms"] = a.time_ms ? json(*a.time_ms) : json(nullptr);
  return j;
}

}  // namespace

std::unique_ptr<EpisodeObserver> CreateProgressDisplay(std::ostream& out, ProgressOptions options) {
  return std::make_unique<ProgressDisplay>(out, std::move(options));
}

std::string FormatAttemptLine(const AttemptSummary& a) {
  std::string line = fmt::format("{} <- {} {}: {}", Ref(a.id), Ref(a.parent_id), a.proposer,
                                 Shorten(a.decision, 60));
  if (a.verdict.empty()) return line + " | not evaluated";
  if (a.verdict == "valid" && a.speedup) {
    line += fmt::format(" | valid {:.2f}x", *a.speedup);
    if (a.roofline) line += fmt::format(" ({:.0f}% of roofline)", 100 * *a.roofline);
    if (a.flagged) {
      std::string flags;
      for (const std::string& f : a.flags) flags += (flags.empty() ? "" : ", ") + f;
      line += " FLAGGED (" + flags + ")";
    }
  } else {
    line += " | " + a.verdict;
    if (!a.message.empty()) line += ": " + Shorten(a.message, 70);
  }
  return line;
}

std::string FormatEpisodeSummary(const EpisodeReport& r, int max_rows) {
  std::string s = fmt::format("{} ({}) on {} {} | run r{} | proposer {} | stopped: {}\n", r.task,
                              r.family, r.backend, r.device, r.run_id, r.proposer, r.stop_reason);
  if (!r.error.empty()) s += "error: " + r.error + "\n";
  s += fmt::format(
      "{} attempts ({} valid), {} evaluated in this session, {} failed proposals; "
      "{} tokens{}; {} ({} evaluating)\n",
      r.attempts.size(), r.valid_attempts, r.session_evaluations, r.failed_proposals,
      Tokens(r.tokens()), r.cost_usd > 0 ? fmt::format(", ${:.4f}", r.cost_usd) : "",
      Duration(r.wall_seconds), Duration(r.eval_seconds));
  if (r.best && r.best->speedup) {
    s += fmt::format("best: a{} {:.2f}x over the baseline", r.best->id, *r.best->speedup);
    if (r.best->roofline) {
      s += fmt::format(", {:.1f}% of the roofline (baseline {:.1f}%)", 100 * *r.best->roofline,
                       100 * r.baseline_roofline);
    }
    if (!r.best->flags.empty()) {
      std::string flags;
      for (const std::string& f : r.best->flags) flags += (flags.empty() ? "" : ", ") + f;
      s += " [flags: " + flags + "]";
    }
    s += r.best->run_id != r.run_id ? fmt::format(" (from run r{})\n", r.best->run_id) : "\n";
  } else {
    s += "best: none valid\n";
  }
  const std::vector<LanguageResult> languages = ResultsByLanguage(r.attempts);
  if (languages.size() > 1) {
    s += "by language:";
    for (const LanguageResult& l : languages) {
      s += fmt::format(" {} {} attempts, {} valid, best {}{};", l.language, l.attempts, l.valid,
                       l.best_speedup ? fmt::format("{:.2f}x", *l.best_speedup) : "-",
                       l.best_attempt != 0 ? fmt::format(" ({})", Ref(l.best_attempt)) : "");
    }
    s.back() = '\n';
  }
  std::vector<const AttemptSummary*> rows;
  for (const AttemptSummary& a : r.attempts) rows.push_back(&a);
  std::stable_sort(rows.begin(), rows.end(), [](const AttemptSummary* a, const AttemptSummary* b) {
    const double sa = a->verdict == "valid" && a->speedup ? *a->speedup : -1;
    const double sb = b->verdict == "valid" && b->speedup ? *b->speedup : -1;
    return sa > sb;
  });
  if (rows.empty()) return s;
  s += fmt::format("  {:<7} {:<7} {:<9} {:<14} {:>8} {:>8}  {}\n", "attempt", "parent", "proposer",
                   "verdict", "speedup", "roofline", "decision");
  int shown = 0;
  for (const AttemptSummary* a : rows) {
    if (shown++ >= max_rows) {
      s += fmt::format("  ... {} more\n", rows.size() - static_cast<size_t>(max_rows));
      break;
    }
    const bool best = r.best && r.best->id == a->id;
    s += fmt::format(
        "  {:<7} {:<7} {:<9} {:<14} {:>8} {:>8}  {}\n", Ref(a->id) + (best ? "*" : ""),
        Ref(a->parent_id), Shorten(a->proposer, 9), a->verdict.empty() ? "-" : a->verdict,
        a->speedup ? fmt::format("{:.2f}x", *a->speedup) : "",
        a->roofline ? fmt::format("{:.1f}%", 100 * *a->roofline) : "", Shorten(a->decision, 60));
  }
  return s;
}

std::vector<LanguageResult> ResultsByLanguage(const std::vector<AttemptSummary>& attempts) {
  std::vector<LanguageResult> out;
  for (const AttemptSummary& a : attempts) {
    auto it = std::find_if(out.begin(), out.end(),
                           [&](const LanguageResult& l) { return l.language == a.language; });
    if (it == out.end()) {
      LanguageResult fresh;
      fresh.language = a.language;
      out.push_back(std::move(fresh));
      it = out.end() - 1;
    }
    it->attempts++;
    if (a.verdict != "valid" || !a.speedup || a.flagged) continue;
    it->valid++;
    if (!it->best_speedup || *a.speedup > *it->best_speedup) {
      it->best_speedup = a.speedup;
      it->best_attempt = a.id;
    }
  }
  return out;
}

std::string EpisodeReportToJson(const EpisodeReport& r, int indent) {
  json j = {{"run", r.run_id},
            {"task", r.task},
            {"task_id", r.task_id},
            {"family", r.family},
            {"hardware_id", r.hardware_id},
            {"backend", r.backend},
            {"device", r.device},
            {"proposer", r.proposer},
            {"language", r.language},
            {"label", r.label},
            {"resumed", r.resumed},
            {"stop_reason", r.stop_reason},
            {"error", r.error},
            {"valid_attempts", r.valid_attempts},
            {"session_attempts", r.session_attempts},
            {"session_evaluations", r.session_evaluations},
            {"failed_proposals", r.failed_proposals},
            {"reused", r.reused},
            {"prompt_tokens", r.prompt_tokens},
            {"completion_tokens", r.completion_tokens},
            {"cost_usd", r.cost_usd},
            {"insights_touched", r.insights_touched},
            {"baseline_roofline", r.baseline_roofline},
            {"wall_seconds", r.wall_seconds},
            {"eval_seconds", r.eval_seconds},
            {"orchestration_seconds", r.orchestration_seconds}};
  j["best"] = r.best ? AttemptJson(*r.best) : json(nullptr);
  json attempts = json::array();
  for (const AttemptSummary& a : r.attempts) attempts.push_back(AttemptJson(a));
  j["attempts"] = attempts;
  const std::vector<LanguageResult> languages = ResultsByLanguage(r.attempts);
  if (languages.size() > 1) {
    json by_language = json::array();
    for (const LanguageResult& l : languages) {
      by_language.push_back(
          {{"language", l.language},
           {"attempts", l.attempts},
           {"valid", l.valid},
           {"best_speedup", l.best_speedup ? json(*l.best_speedup) : json()},
           {"best_attempt", l.best_attempt == 0 ? json() : json(l.best_attempt)}});
    }
    j["languages"] = by_language;
  }
  return j.dump(indent);
}

}  // namespace kope::agent
