// The passive mode, the ablation baseline: the task and the episode's whole history, appended
// turn after turn, nothing ranked or shortened; the oldest turns fall out only when the history
// outgrows the budget (the model's context window).
#include <fmt/format.h>

#include <algorithm>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "assembly.h"

namespace kope::context::internal {
namespace {

using Turn = std::pair<memory::NodeId, std::string>;

// Every turn of the run but the node's own (its source is the kernel to change), oldest first.
Result<std::vector<Turn>> RunTurns(memory::GraphStore& store, const State& state) {
  std::vector<memory::AttemptView> views;
  if (state.run != 0) {
    KOPE_ASSIGN_OR_RETURN(views, store.RunAttempts(state.run));
  }
  const memory::NodeId node = state.node ? state.node->attempt.id : 0;
  std::vector<Turn> turns;
  for (const memory::AttemptView& v : views) {
    if (v.attempt.id == node) continue;
    std::string source;
    if (!v.attempt.source_hash.empty()) {
      KOPE_ASSIGN_OR_RETURN(source, store.GetSource(v.attempt.source_hash));
    }
    turns.emplace_back(v.attempt.id, TurnText(v, source, state.language));
  }
  return turns;
}

std::string LeftOutNote(size_t n) {
  return fmt::format("({} earlier attempts are left out: the context window is full.)\n", n);
}

// The first turn shown: newest first while they fit in `left` tokens, after the heading and the
// note that says how many older turns were left out (its longest wording reserved). Nullopt (no
// history at all) when not even those fit.
std::optional<size_t> FirstShownTurn(const std::vector<Turn>& turns, const std::string& heading,
                                     const TokenCounter& counter, int64_t left) {
  if (turns.empty()) return std::nullopt;
  const int64_t overhead = counter.Bound(heading) + counter.Bound(LeftOutNote(turns.size()));
  if (overhead > left) return std::nullopt;
  left -= overhead;
  size_t first = turns.size();
  while (first > 0 && counter.Bound(turns[first - 1].second) <= left) {
    left -= counter.Bound(turns[first - 1].second);
    --first;
  }
  return first;
}

// Appends the history section: its heading, the note on the turns left out, and the turns from
// `first` on.
void AppendHistory(const std::vector<Turn>& turns, size_t first, const std::string& heading,
                   const TokenCounter& counter, int64_t quota, BuiltContext& built) {
  SectionUsage usage;
  usage.section = Section::kHistory;
  usage.quota = quota;
  usage.tokens = counter.Bound(heading);
  usage.dropped = static_cast<int>(first);
  built.user_prompt += heading;
  if (first > 0) {
    const std::string text = LeftOutNote(first);
    usage.tokens += counter.Bound(text);
    built.user_prompt += text;
  }
  for (size_t i = first; i < turns.size(); ++i) {
    ContextItem item;
    item.section = Section::kHistory;
    item.kind = "turn";
    item.node = {memory::NodeKind::kAttempt, turns[i].first};
    item.tokens = counter.Bound(turns[i].second);
    item.text = turns[i].second;
    usage.tokens += item.tokens;
    ++usage.items;
    built.user_prompt += item.text;
    built.items.push_back(std::move(item));
  }
  built.sections.push_back(usage);
}

}  // namespace

Result<BuiltContext> BuildPassive(memory::GraphStore& store, State& state) {
  KOPE_ASSIGN_OR_RETURN(FixedParts fixed, MakeFixedParts(state, 1.0));
  KOPE_ASSIGN_OR_RETURN(std::vector<Turn> turns, RunTurns(store, state));
  const int64_t left = state.request->budget_tokens - fixed.tokens;
  const std::string heading = SectionHeading(Section::kHistory);
  const std::optional<size_t> first = FirstShownTurn(turns, heading, state.counter, left);

  BuiltContext built =
      StartContext(state, fixed, ContextMode::kPassive, static_cast<int>(turns.size()));
  if (first) AppendHistory(turns, *first, heading, state.counter, left, built);
  KOPE_RETURN_IF_ERROR(EndContext(state, fixed, built));
  return built;
}

}  // namespace kope::context::internal
