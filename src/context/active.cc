// The active mode: retrieve, rank, pack under quotas, render.
#include <algorithm>
#include <cmath>
#include <map>

#include "assembly.h"
#include "packing.h"
#include "ranking.h"
#include "retrieval.h"

namespace kope::context::internal {
namespace {

// The share of the fixed parts (system prompt, task, kernel to change, ask) up to which the
// kernel to change is shown in full.
constexpr double kFixedShare = 0.75;

// How much of an item each form keeps: a lesson says most of itself in a line, an exemplar's
// worth is its code.
double FidelityValue(std::string_view kind, Fidelity f) {
  if (f == Fidelity::kFull) return 1.0;
  const bool line = f == Fidelity::kLine;
  if (kind == "insight" || kind == "failure_rule") return line ? 0.5 : 0.8;
  if (kind == "step" || kind == "alternative") return line ? 0.45 : 0.7;
  if (kind == "exemplar") return line ? 0.15 : 0.55;
  return line ? 0.3 : 0.6;
}

}  // namespace

Result<BuiltContext> BuildActive(memory::GraphStore& store, State& state) {
  KOPE_ASSIGN_OR_RETURN(std::vector<Candidate> candidates, Retrieve(store, state));
  std::map<Section, int> retrieved;
  for (const Candidate& c : candidates) ++retrieved[c.section];
  const int considered = static_cast<int>(candidates.size());
  KOPE_RETURN_IF_ERROR(ScoreCandidates(store, state, candidates));
  Diversify(candidates);
  for (Candidate& c : candidates) {
    KOPE_RETURN_IF_ERROR(RenderForms(store, state, c));
    c.form_tokens = CollapseForms(c.forms, state.counter);
  }

  KOPE_ASSIGN_OR_RETURN(FixedParts fixed, MakeFixedParts(state, kFixedShare));
  const TokenCounter& counter = state.counter;
  const int64_t available = state.request->budget_tokens - fixed.tokens;

  // One packing group per ranked section, with its quota of what the task leaves.
  std::vector<PackGroup> groups;
  std::map<Section, int> group_of;
  for (const SectionQuota& q : kQuotas) {
    group_of[q.section] = static_cast<int>(groups.size());
    groups.push_back({static_cast<int64_t>(std::floor(q.fraction * static_cast<double>(available))),
                      counter.Bound(SectionHeading(q.section))});
  }
  std::vector<PackItem> items;
  for (const Candidate& c : candidates) {
    PackItem item;
    item.group = group_of.at(c.section);
    for (size_t f = 0; f < c.forms.size(); ++f) {
      item.forms.push_back({c.form_tokens[f], c.score * FidelityValue(c.kind, c.forms[f].first)});
    }
    items.push_back(std::move(item));
  }
  const PackResult packed = Pack(groups, items, available);

  BuiltContext built;
  built.mode = ContextMode::kActive;
  built.candidates = considered;
  built.system_prompt = fixed.system;
  built.items.push_back(FixedItem(state, "system", fixed.system, Fidelity::kFull));
  built.items.push_back(FixedItem(state, "task", fixed.task, Fidelity::kFull));
  built.user_prompt = fixed.task;
  SectionUsage task_usage;
  task_usage.section = Section::kTask;
  task_usage.quota = fixed.tokens;
  task_usage.tokens = fixed.tokens;
  task_usage.items = 3;
  task_usage.shortened = fixed.kernel.first == Fidelity::kFull ? 0 : 1;
  built.sections.push_back(task_usage);

  for (const SectionQuota& q : kQuotas) {
    const int g = group_of.at(q.section);
    std::vector<size_t> chosen;
    for (size_t i = 0; i < candidates.size(); ++i) {
      if (candidates[i].section == q.section && packed.form[i] >= 0) chosen.push_back(i);
    }
    if (retrieved[q.section] == 0) continue;
    SectionUsage usage;
    usage.section = q.section;
    usage.quota = groups[static_cast<size_t>(g)].quota;
    usage.tokens = packed.group_tokens[static_cast<size_t>(g)];
    usage.items = static_cast<int>(chosen.size());
    usage.dropped = retrieved[q.section] - usage.items;
    std::stable_sort(chosen.begin(), chosen.end(), [&](size_t a, size_t b) {
      if (candidates[a].order != candidates[b].order)
        return candidates[a].order < candidates[b].order;
      return candidates[a].node.id < candidates[b].node.id;
    });
    if (!chosen.empty()) built.user_prompt += SectionHeading(q.section);
    for (size_t i : chosen) {
      const Candidate& c = candidates[i];
      const auto form = static_cast<size_t>(packed.form[i]);
      const auto& [fidelity, text] = c.forms[form];
      if (fidelity != Fidelity::kFull) ++usage.shortened;
      ContextItem item;
      item.section = c.section;
      item.kind = c.kind;
      item.node = c.node;
      item.score = c.score;
      item.tokens = c.form_tokens[form];
      item.text = text;
      item.fidelity = fidelity;
      built.user_prompt += text;
      built.items.push_back(std::move(item));
    }
    built.sections.push_back(usage);
  }
  built.user_prompt += fixed.kernel.second;
  built.items.push_back(FixedItem(state, "kernel", fixed.kernel.second, fixed.kernel.first));
  built.user_prompt += fixed.closing;
  built.items.push_back(FixedItem(state, "ask", fixed.closing, Fidelity::kFull));
  KOPE_RETURN_IF_ERROR(Finish(state, built));
  return built;
}

}  // namespace kope::context::internal
