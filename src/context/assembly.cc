// The parts both modes share, and the totals.
#include "assembly.h"

#include <fmt/format.h>

namespace kope::context::internal {

std::vector<int64_t> CollapseForms(Forms& forms, const TokenCounter& counter) {
  Forms kept;
  std::vector<int64_t> tokens;
  for (auto& [fidelity, text] : forms) {
    const int64_t t = counter.Bound(text);
    if (!tokens.empty() && t >= tokens.back()) continue;
    tokens.push_back(t);
    kept.emplace_back(fidelity, std::move(text));
  }
  forms = std::move(kept);
  return tokens;
}

Result<FixedParts> MakeFixedParts(const State& state, double share) {
  FixedParts parts;
  parts.system = SystemPrompt(state);
  parts.task = TaskText(state);
  parts.closing = Closing(state);
  const TokenCounter& counter = state.counter;
  const int64_t budget = state.request->budget_tokens;
  const int64_t base =
      counter.Bound(parts.system) + counter.Bound(parts.task) + counter.Bound(parts.closing);
  Forms kernel = KernelForms(state);
  const std::vector<int64_t> kernel_tokens = CollapseForms(kernel, counter);
  size_t chosen = kernel.size() - 1;
  for (size_t i = 0; i < kernel.size(); ++i) {
    if (static_cast<double>(base + kernel_tokens[i]) <= share * static_cast<double>(budget)) {
      chosen = i;
      break;
    }
  }
  parts.kernel = std::move(kernel[chosen]);
  parts.tokens = base + kernel_tokens[chosen];
  if (parts.tokens > budget) {
    return Status::InvalidArgument(fmt::format(
        "a budget of {} tokens is too small: the task alone needs {}", budget, parts.tokens));
  }
  return parts;
}

ContextItem FixedItem(const State& state, std::string kind, std::string text, Fidelity fidelity) {
  ContextItem item;
  item.section = Section::kTask;
  item.kind = std::move(kind);
  if (item.kind == "kernel" && state.node) {
    item.node = {memory::NodeKind::kAttempt, state.node->attempt.id};
  }
  if (item.kind == "task" && state.task_id != 0)
    item.node = {memory::NodeKind::kTask, state.task_id};
  item.tokens = state.counter.Bound(text);
  item.text = std::move(text);
  item.fidelity = fidelity;
  return item;
}

Status Finish(const State& state, BuiltContext& built) {
  built.budget_tokens = state.request->budget_tokens;
  built.raw_tokens = EstimateTokens(built.system_prompt) + EstimateTokens(built.user_prompt);
  built.expected_tokens = state.counter.Expected(built.raw_tokens);
  built.total_tokens = state.counter.Bound(built.raw_tokens);
  built.task_id = state.task_id;
  built.hardware_id = state.hardware_id;
  built.node = state.node ? state.node->attempt.id : 0;
  built.run = state.run;
  if (built.total_tokens > built.budget_tokens) {
    return Status::Internal(fmt::format("context of {} tokens exceeds its budget of {}",
                                        built.total_tokens, built.budget_tokens));
  }
  return Status::Ok();
}

BuiltContext StartContext(const State& state, const FixedParts& fixed, ContextMode mode,
                          int candidates) {
  BuiltContext built;
  built.mode = mode;
  built.candidates = candidates;
  built.system_prompt = fixed.system;
  built.items.push_back(FixedItem(state, "system", fixed.system, Fidelity::kFull));
  built.items.push_back(FixedItem(state, "task", fixed.task, Fidelity::kFull));
  built.user_prompt = fixed.task;
  SectionUsage usage;
  usage.section = Section::kTask;
  usage.quota = fixed.tokens;
  usage.tokens = fixed.tokens;
  usage.items = 3;
  usage.shortened = fixed.kernel.first == Fidelity::kFull ? 0 : 1;
  built.sections.push_back(usage);
  return built;
}

Status EndContext(const State& state, const FixedParts& fixed, BuiltContext& built) {
  built.user_prompt += fixed.kernel.second;
  built.items.push_back(FixedItem(state, "kernel", fixed.kernel.second, fixed.kernel.first));
  built.user_prompt += fixed.closing;
  built.items.push_back(FixedItem(state, "ask", fixed.closing, Fidelity::kFull));
  return Finish(state, built);
}

}  // namespace kope::context::internal
