// The items of the prompt in their three forms: full, summary, one line.
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "kope/memory/text/line_diff.h"
#include "render.h"
#include "text.h"

namespace kope::context::internal {
namespace {

using memory::AttemptView;
using memory::NodeKind;
using nlohmann::json;

std::string Classes(const std::vector<std::string>& classes) {
  if (classes.empty()) return "";
  std::string out = " [";
  for (size_t i = 0; i < classes.size(); ++i) out += (i == 0 ? "" : ", ") + classes[i];
  return out + "]";
}

std::string Ref(const AttemptView& v) { return ShortRef({NodeKind::kAttempt, v.attempt.id}); }

std::string AlsoNote(const Candidate& c) {
  if (c.duplicates.empty()) return "";
  std::string out = " (the same idea also as ";
  for (size_t i = 0; i < c.duplicates.size() && i < 6; ++i) {
    out += (i == 0 ? "" : ", ") + ShortRef({c.node.kind, c.duplicates[i]});
  }
  if (c.duplicates.size() > 6) out += fmt::format(" and {} more", c.duplicates.size() - 6);
  return out + ")";
}

std::string Fenced(std::string_view language, std::string_view code) {
  std::string out = "```" + std::string(language) + "\n" + std::string(code);
  if (!out.empty() && out.back() != '\n') out.push_back('\n');
  return out + "```\n";
}

std::string Scope(const memory::InsightScope& s) {
  std::string out = s.op_family.empty() ? "any op" : s.op_family;
  if (!s.device.empty()) {
    out += ", " + s.device;
  } else if (!s.arch.empty()) {
    out += ", " + s.arch;
  } else if (!s.backend.empty()) {
    out += ", " + s.backend;
  } else {
    out += ", any hardware";
  }
  if (s.size_min > 0 || s.size_max > 0) {
    out += ", sizes " + (s.size_min > 0 ? HumanCount(s.size_min) : std::string("0")) + "-" +
           (s.size_max > 0 ? HumanCount(s.size_max) : std::string("any"));
  }
  if (!s.compiler.empty()) out += ", " + s.compiler;
  return out;
}

double Number(const json& j, std::initializer_list<const char*> path) {
  const json* at = &j;
  for (const char* key : path) {
    if (!at->is_object()) return 0;
    auto it = at->find(key);
    if (it == at->end()) return 0;
    at = &*it;
  }
  return at->is_number() ? at->get<double>() : 0;
}

std::string EvidenceWords(const memory::OutcomeNode& o, bool detailed) {
  json e = json::parse(o.evidence_json, nullptr, false);
  std::string out;
  double median_s = Number(e, {"candidate_time", "median_s"});
  if (median_s <= 0) median_s = Number(e, {"median_ms"}) / 1e3;
  if (median_s <= 0 && o.time_ms) median_s = *o.time_ms / 1e3;
  if (median_s > 0) out += fmt::format("median {:.4g} ms", median_s * 1e3);
  double spread = Number(e, {"candidate_time", "spread"});
  if (spread <= 0) spread = Number(e, {"spread"});
  if (spread > 0) out += fmt::format(" (spread {:.1f}%)", spread * 100);
  const double baseline_s = Number(e, {"baseline_time", "median_s"});
  if (baseline_s > 0) out += fmt::format(", baseline {:.4g} ms", baseline_s * 1e3);
  if (!detailed || !e.is_object()) return out;
  auto profile = e.find("profile");
  if (profile != e.end() && profile->is_object()) {
    if (profile->contains("limiter") && (*profile)["limiter"].is_string()) {
      out += "; limited by " + (*profile)["limiter"].get<std::string>();
    }
    auto metrics = profile->find("metrics");
    std::string list;
    int shown = 0;
    auto add = [&](const std::string& name, const json& value) {
      if (shown++ >= 12 || !value.is_number()) return;
      list += (list.empty() ? "" : ", ") + name + " " + fmt::format("{:.4g}", value.get<double>());
    };
    if (metrics != profile->end() && metrics->is_object()) {
      for (const auto& [name, value] : metrics->items()) add(name, value);
    } else if (metrics != profile->end() && metrics->is_array()) {
      for (const json& m : *metrics) {
        if (m.is_array() && m.size() == 2 && m[0].is_string()) add(m[0].get<std::string>(), m[1]);
      }
    }
    if (!list.empty()) out += "; profile: " + list;
  }
  auto resources = e.find("resources");
  if (resources != e.end() && resources->is_array()) {
    std::string list;
    int shown = 0;
    for (const json& r : *resources) {
      if (!r.is_object() || shown++ >= 3) continue;
      std::string function = r.value("function", "");
      function = function.substr(0, function.find('('));
      list += (list.empty() ? "" : "; ") + function +
              fmt::format(" {} registers, {} B shared", Number(r, {"registers"}),
                          Number(r, {"shared_bytes"}));
      const double spills = Number(r, {"spill_store_bytes"}) + Number(r, {"spill_load_bytes"});
      if (spills > 0) list += fmt::format(", {} B spilled", spills);
    }
    if (!list.empty()) out += "; resources: " + list;
  }
  auto flags = e.find("flags");
  if (flags != e.end() && flags->is_array() && !flags->empty()) {
    std::string f;
    for (const json& x : *flags)
      f += (f.empty() ? "" : ", ") + (x.is_string() ? x.get<std::string>() : x.dump());
    out += "; flags: " + f;
  }
  return out;
}

}  // namespace

std::string EvidenceText(const memory::OutcomeNode& outcome, bool detailed) {
  return EvidenceWords(outcome, detailed);
}

namespace {

Forms StepForms(const Candidate& c) {
  const AttemptView& v = *c.attempt;
  const std::string ref = Ref(v);
  const std::string parent =
      v.attempt.parent_id != 0 ? " <- " + ShortRef({NodeKind::kAttempt, v.attempt.parent_id}) : "";
  return {{Fidelity::kFull, "- " + ref + parent + Classes(v.attempt.classes) + ": " +
                                OneLine(v.attempt.decision, 600) + " -> " +
                                OutcomeText(v.outcome, c.parent_speedup, false) + "\n"},
          {Fidelity::kSummary, "- " + ref + ": " + FirstSentence(v.attempt.decision, 140) + " -> " +
                                   OutcomeText(v.outcome, std::nullopt, false) + "\n"},
          {Fidelity::kLine, "- " + ref + Classes(v.attempt.classes) + " -> " +
                                OneLine(OutcomeText(v.outcome, std::nullopt, false), 60) + "\n"}};
}

Forms AlternativeForms(const Candidate& c) {
  const AttemptView& v = *c.attempt;
  const std::string head = "- " + Ref(v) + Classes(v.attempt.classes);
  const std::string result = OutcomeText(v.outcome, c.parent_speedup, false);
  std::string full =
      head + ": " + OneLine(v.attempt.decision, 500) + " -> " + result + AlsoNote(c) + "\n";
  const std::string hunks = DiffHunks(v.attempt.diff, 16);
  if (!hunks.empty()) full += Fenced("diff", hunks);
  return {{Fidelity::kFull, full},
          {Fidelity::kSummary, head + ": " + FirstSentence(v.attempt.decision, 140) + " -> " +
                                   OneLine(result, 120) + AlsoNote(c) + "\n"},
          {Fidelity::kLine, head + " -> " + OneLine(result, 60) + "\n"}};
}

Forms InsightForms(const Candidate& c) {
  const memory::InsightNode& i = *c.insight;
  const std::string ref = ShortRef(c.node);
  const std::string counts = fmt::format("supported {}, contradicted {}, effect {:.2f}x", i.support,
                                         i.contradiction, i.effect_size);
  return {{Fidelity::kFull, "- " + OneLine(i.text, 600) + " (" + ref + "; " + Scope(i.scope) +
                                "; " + counts + ")" + AlsoNote(c) + "\n"},
          {Fidelity::kSummary, "- " + OneLine(i.text, 200) +
                                   fmt::format(" ({}; {}/{}, {:.2f}x)", ref, i.support,
                                               i.contradiction, i.effect_size) +
                                   "\n"},
          {Fidelity::kLine, "- " + OneLine(i.text, 90) + " (" + ref + ")\n"}};
}

Forms FixForms(const Candidate& c) {
  const AttemptView& v = *c.attempt;
  const std::string fix = Ref(v);
  const std::string failed = ShortRef({NodeKind::kAttempt, c.failed_attempt});
  std::string full = "- Error `" + OneLine(c.error, 240) + "` (" + failed + ") was fixed by " +
                     fix + ": " + OneLine(v.attempt.decision, 300) + "\n";
  const std::string hunks = DiffHunks(v.attempt.diff, 20);
  if (!hunks.empty()) full += Fenced("diff", hunks);
  return {{Fidelity::kFull, full},
          {Fidelity::kSummary, "- Error `" + OneLine(c.error, 160) + "` was fixed by " + fix +
                                   ": " + FirstSentence(v.attempt.decision, 140) + "\n"},
          {Fidelity::kLine, "- `" + OneLine(c.error, 90) + "` fixed by " + fix + "\n"}};
}

// An exemplar that differs from the kernel to change (which the prompt holds whole) in at most
// this many diff lines is summarized as those lines: the summary then holds it whole too.
constexpr size_t kAgainstKernelLines = 24;

// The exemplar against the kernel to change, or "" when there is none or they differ in more.
std::string AgainstKernel(const State& state, std::string_view source) {
  if (source.empty() || state.base_source.empty() || source == state.base_source) return "";
  memory::DiffOptions options;
  options.context = 1;
  options.old_name = "kernel-to-change";
  options.new_name = "exemplar";
  const std::string diff = memory::UnifiedDiff(state.base_source, source, options);
  const std::string hunks = DiffHunks(diff, kAgainstKernelLines);
  if (hunks.find("more diff lines)") != std::string::npos) return "";
  return "Against the kernel to change, the whole difference:\n" + Fenced("diff", hunks);
}

Forms ExemplarForms(const Candidate& c, const State& state, std::string_view source,
                    const std::string& against) {
  const AttemptView& v = *c.attempt;
  const std::string head = "### " + Ref(v) + " on " + c.origin + ": " +
                           OutcomeText(v.outcome, std::nullopt, false) + "\n";
  std::string full = head + OneLine(v.attempt.decision, 400) + "\n";
  const std::string fence = FenceLanguage(source, state.language);
  if (!source.empty()) full += Fenced(fence, ExcerptCode(source, 60));
  std::string summary = head + FirstSentence(v.attempt.decision, 160) + "\n";
  const std::string hunks = DiffHunks(v.attempt.diff, 14);
  if (!against.empty()) {
    summary += against;
  } else if (!hunks.empty()) {
    summary += "Its last change:\n" + Fenced("diff", hunks);
  } else if (!source.empty()) {
    summary += Fenced(fence, ExcerptCode(source, 15));
  }
  const std::string task = c.origin.substr(0, c.origin.find(" ("));
  return {{Fidelity::kFull, full},
          {Fidelity::kSummary, summary},
          {Fidelity::kLine, "- " + Ref(v) + " on " + task + ": " +
                                OneLine(OutcomeText(v.outcome, std::nullopt, false), 60) +
                                Classes(v.attempt.classes) + ": " +
                                FirstSentence(v.attempt.decision, 80) + "\n"}};
}

Forms BestForms(const Candidate& c) {
  const AttemptView& v = *c.attempt;
  const std::string result = OutcomeText(v.outcome, std::nullopt, false);
  const std::string timing = v.outcome ? EvidenceText(*v.outcome, true) : "";
  const std::string brief = v.outcome ? EvidenceText(*v.outcome, false) : "";
  return {{Fidelity::kFull, "- " + Ref(v) + Classes(v.attempt.classes) + ": " + result +
                                (timing.empty() ? "" : "; " + timing) +
                                "\n  Its decision: " + OneLine(v.attempt.decision, 300) + "\n"},
          {Fidelity::kSummary, "- " + Ref(v) + ": " + OneLine(result, 100) +
                                   (brief.empty() ? "" : "; " + brief) + "\n"},
          {Fidelity::kLine, "- " + Ref(v) + ": " + OneLine(result, 60) + "\n"}};
}

}  // namespace

std::string ShortRef(const memory::NodeRef& ref) {
  const char* prefix = "a";
  switch (ref.kind) {
    case NodeKind::kTask:
      prefix = "t";
      break;
    case NodeKind::kHardware:
      prefix = "h";
      break;
    case NodeKind::kRun:
      prefix = "r";
      break;
    case NodeKind::kAttempt:
      prefix = "a";
      break;
    case NodeKind::kOutcome:
      prefix = "o";
      break;
    case NodeKind::kInsight:
      prefix = "i";
      break;
    case NodeKind::kWorkload:
      prefix = "w";
      break;
  }
  return prefix + std::to_string(ref.id);
}

std::string OutcomeText(const std::optional<memory::OutcomeNode>& outcome,
                        std::optional<double> parent_speedup, bool detailed) {
  if (!outcome) return "not evaluated";
  const memory::OutcomeNode& o = *outcome;
  std::string out;
  if (o.verdict == memory::kVerdictValid) {
    out = "valid";
    if (o.speedup) out += fmt::format(", {:.2f}x over the baseline", *o.speedup);
    if (o.speedup && parent_speedup && *parent_speedup > 0) {
      out += fmt::format(" ({:.2f}x over its parent)", *o.speedup / *parent_speedup);
    }
    if (o.roofline) out += fmt::format(", {:.0f}% of the roofline", *o.roofline * 100);
    if (o.flagged) out += ", flagged as suspicious";
    return out;
  }
  out = o.verdict;
  const std::string& error = o.error_signature.empty() ? o.error_message : o.error_signature;
  if (!detailed) return error.empty() ? out : out + ": " + OneLine(error, 200);
  if (!o.error_message.empty()) out += ":\n" + Fenced("", FirstLines(o.error_message, 40));
  return out;
}

std::string TurnText(const AttemptView& view, std::string_view source, std::string_view language) {
  std::string out = "\n### Attempt " + Ref(view);
  if (view.attempt.parent_id != 0) {
    out += " (changed from " + ShortRef({NodeKind::kAttempt, view.attempt.parent_id}) + ")";
  }
  out += "\nDECISION: " + OneLine(view.attempt.decision, 4000) + "\n";
  if (!source.empty()) out += Fenced(FenceLanguage(source, language), source);
  std::string result = OutcomeText(view.outcome, std::nullopt, true);
  if (view.outcome && view.outcome->verdict == memory::kVerdictValid) {
    const std::string timing = EvidenceText(*view.outcome, true);
    if (!timing.empty()) result += "; " + timing;
  }
  out += "Result: " + result;
  if (out.back() != '\n') out.push_back('\n');
  return out;
}

Status RenderForms(memory::GraphStore& store, const State& state, Candidate& c) {
  if (c.kind == "step") {
    c.forms = StepForms(c);
  } else if (c.kind == "alternative") {
    c.forms = AlternativeForms(c);
  } else if (c.kind == "insight" || c.kind == "failure_rule") {
    c.forms = InsightForms(c);
  } else if (c.kind == "fix") {
    c.forms = FixForms(c);
  } else if (c.kind == "exemplar") {
    std::string source;
    if (!c.attempt->attempt.source_hash.empty()) {
      KOPE_ASSIGN_OR_RETURN(source, store.GetSource(c.attempt->attempt.source_hash));
    }
    const std::string against = AgainstKernel(state, source);
    c.summary_is_whole = !against.empty();
    c.forms = ExemplarForms(c, state, source, against);
  } else if (c.kind == "best") {
    c.forms = BestForms(c);
  } else {
    return Status::Internal("no rendering for context items of kind " + c.kind);
  }
  return Status::Ok();
}

}  // namespace kope::context::internal
