// The passive mode, the ablation baseline: the task and the episode's whole history, appended
// turn after turn, nothing ranked or shortened; the oldest turns fall out only when the history
// outgrows the budget (the model's context window).
#include <fmt/format.h>

#include <algorithm>

#include "assembly.h"

namespace kope::context::internal {

Result<BuiltContext> BuildPassive(memory::GraphStore& store, State& state) {
  KOPE_ASSIGN_OR_RETURN(FixedParts fixed, MakeFixedParts(state, 1.0));
  const TokenCounter& counter = state.counter;
  const int64_t budget = state.request->budget_tokens;

  // Every turn of the run but the node's own (its source is the kernel to change), oldest first.
  std::vector<memory::AttemptView> views;
  if (state.run != 0) {
    KOPE_ASSIGN_OR_RETURN(views, store.RunAttempts(state.run));
  }
  const memory::NodeId node = state.node ? state.node->attempt.id : 0;
  std::vector<std::pair<memory::NodeId, std::string>> turns;
  for (const memory::AttemptView& v : views) {
    if (v.attempt.id == node) continue;
    std::string source;
    if (!v.attempt.source_hash.empty()) {
      KOPE_ASSIGN_OR_RETURN(source, store.GetSource(v.attempt.source_hash));
    }
    turns.emplace_back(v.attempt.id, TurnText(v, source, state.language));
  }

  // Newest first while they fit, after the heading and the note that says how many older
  // turns were left out (its longest wording reserved); no history at all when not even those fit.
  const std::string heading = SectionHeading(Section::kHistory);
  auto note = [](size_t n) {
    return fmt::format("({} earlier attempts are left out: the context window is full.)\n", n);
  };
  int64_t left = budget - fixed.tokens;
  size_t first = turns.size();
  bool show_history = false;
  if (!turns.empty()) {
    const int64_t overhead = counter.Bound(heading) + counter.Bound(note(turns.size()));
    if (overhead <= left) {
      show_history = true;
      left -= overhead;
      while (first > 0 && counter.Bound(turns[first - 1].second) <= left) {
        left -= counter.Bound(turns[first - 1].second);
        --first;
      }
    }
  }

  BuiltContext built;
  built.mode = ContextMode::kPassive;
  built.candidates = static_cast<int>(turns.size());
  built.system_prompt = fixed.system;
  built.items.push_back(FixedItem(state, "system", fixed.system, Fidelity::kFull));
  built.items.push_back(FixedItem(state, "task", fixed.task, Fidelity::kFull));
  built.user_prompt = fixed.task;
  built.sections.push_back({Section::kTask, fixed.tokens, fixed.tokens, 3,
                            fixed.kernel.first == Fidelity::kFull ? 0 : 1, 0});
  if (show_history) {
    SectionUsage usage;
    usage.section = Section::kHistory;
    usage.quota = budget - fixed.tokens;
    usage.tokens = counter.Bound(heading);
    usage.dropped = static_cast<int>(first);
    built.user_prompt += heading;
    if (first > 0) {
      const std::string text = note(first);
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
  built.user_prompt += fixed.kernel.second;
  built.items.push_back(FixedItem(state, "kernel", fixed.kernel.second, fixed.kernel.first));
  built.user_prompt += fixed.closing;
  built.items.push_back(FixedItem(state, "ask", fixed.closing, Fidelity::kFull));
  KOPE_RETURN_IF_ERROR(Finish(state, built));
  return built;
}

}  // namespace kope::context::internal
