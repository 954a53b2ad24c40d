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
// worth is its code (which a summary holds whole when it is the difference from the kernel to
// change).
double FidelityValue(const Candidate& c, Fidelity f) {
  if (f == Fidelity::kFull) return 1.0;
  const bool line = f == Fidelity::kLine;
  if (c.kind == "insight" || c.kind == "failure_rule") return line ? 0.5 : 0.8;
  if (c.kind == "step" || c.kind == "alternative") return line ? 0.45 : 0.7;
  if (c.kind == "exemplar") return line ? 0.15 : c.summary_is_whole ? 0.9 : 0.55;
  return line ? 0.3 : 0.6;
}

// The retrieved candidates scored, diversified and rendered in each of their forms; `retrieved`
// counts them by section as retrieved.
Result<std::vector<Candidate>> PrepareCandidates(memory::GraphStore& store, State& state,
                                                 std::map<Section, int>& retrieved) {
  KOPE_ASSIGN_OR_RETURN(std::vector<Candidate> candidates, Retrieve(store, state));
  for (const Candidate& c : candidates) ++retrieved[c.section];
  KOPE_RETURN_IF_ERROR(ScoreCandidates(store, state, candidates));
  Diversify(candidates);
  for (Candidate& c : candidates) {
    KOPE_RETURN_IF_ERROR(RenderForms(store, state, c));
    c.form_tokens = CollapseForms(c.forms, state.counter);
  }
  return candidates;
}

// The packing problem: one group per ranked section, with its quota of what the task leaves, and
// one item per candidate, each form valued by its score and what the form keeps.
struct PackPlan {
  std::vector<PackGroup> groups;
  std::map<Section, int> group_of;
  std::vector<PackItem> items;
};

PackPlan MakePackPlan(const std::vector<Candidate>& candidates, const TokenCounter& counter,
                      int64_t available) {
  PackPlan plan;
  for (const SectionQuota& q : kQuotas) {
    plan.group_of[q.section] = static_cast<int>(plan.groups.size());
    plan.groups.push_back(
        {static_cast<int64_t>(std::floor(q.fraction * static_cast<double>(available))),
         counter.Bound(SectionHeading(q.section))});
  }
  for (const Candidate& c : candidates) {
    PackItem item;
    item.group = plan.group_of.at(c.section);
    for (size_t f = 0; f < c.forms.size(); ++f) {
      item.forms.push_back({c.form_tokens[f], c.score * FidelityValue(c, c.forms[f].first)});
    }
    plan.items.push_back(std::move(item));
  }
  return plan;
}

// Appends a section's chosen candidates, in their retrieval order, in the forms packed; a section
// nothing was retrieved for is left out.
void AppendSection(const SectionQuota& q, const std::vector<Candidate>& candidates,
                   const PackPlan& plan, const PackResult& packed, int retrieved,
                   BuiltContext& built) {
  if (retrieved == 0) return;
  const auto g = static_cast<size_t>(plan.group_of.at(q.section));
  std::vector<size_t> chosen;
  for (size_t i = 0; i < candidates.size(); ++i) {
    if (candidates[i].section == q.section && packed.form[i] >= 0) chosen.push_back(i);
  }
  SectionUsage usage;
  usage.section = q.section;
  usage.quota = plan.groups[g].quota;
  usage.tokens = packed.group_tokens[g];
  usage.items = static_cast<int>(chosen.size());
  usage.dropped = retrieved - usage.items;
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

}  // namespace

Result<BuiltContext> BuildActive(memory::GraphStore& store, State& state) {
  std::map<Section, int> retrieved;
  KOPE_ASSIGN_OR_RETURN(std::vector<Candidate> candidates,
                        PrepareCandidates(store, state, retrieved));
  int considered = 0;
  for (const auto& [section, n] : retrieved) considered += n;
  KOPE_ASSIGN_OR_RETURN(FixedParts fixed, MakeFixedParts(state, kFixedShare));
  const int64_t available = state.request->budget_tokens - fixed.tokens;
  const PackPlan plan = MakePackPlan(candidates, state.counter, available);
  const PackResult packed = Pack(plan.groups, plan.items, available);

  BuiltContext built = StartContext(state, fixed, ContextMode::kActive, considered);
  for (const SectionQuota& q : kQuotas) {
    AppendSection(q, candidates, plan, packed, retrieved[q.section], built);
  }
  KOPE_RETURN_IF_ERROR(EndContext(state, fixed, built));
  return built;
}

}  // namespace kope::context::internal
