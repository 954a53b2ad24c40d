#include "kope/agent/node_selection.h"

#include <algorithm>
#include <cmath>

namespace kope::agent {

double ChildGain(double parent_speedup, double child_speedup) {
  if (parent_speedup <= 0 || child_speedup <= 0) return 0;
  return std::min(1.0, std::max(0.0, child_speedup / parent_speedup - 1.0));
}

Selection SelectNode(const SelectionInput& input) {
  double best = 0;
  int total = input.fresh_starts;
  for (const NodeArm& arm : input.nodes) {
    best = std::max(best, arm.speedup);
    total += arm.expansions;
  }
  const double log_total = std::log(1.0 + total);
  auto bonus = [&](int pulls) { return input.exploration * std::sqrt(log_total / (1.0 + pulls)); };

  Selection chosen;
  const NodeArm* chosen_arm = nullptr;
  for (const NodeArm& arm : input.nodes) {
    if (arm.exhausted || arm.speedup <= 0) continue;
    const double quality = best > 0 ? arm.speedup / best : 0;
    const double mean_gain = arm.expansions > 0 ? arm.gain_sum / arm.expansions : 0;
    const double score = quality * (1 + mean_gain) + bonus(arm.expansions);
    bool better = chosen_arm == nullptr || score > chosen.score;
    if (chosen_arm != nullptr && score == chosen.score) {
      better = arm.speedup > chosen_arm->speedup ||
               (arm.speedup == chosen_arm->speedup && arm.id < chosen_arm->id);
    }
    if (better) {
      chosen.kind = Selection::Kind::kNode;
      chosen.node = arm.id;
      chosen.score = score;
      chosen_arm = &arm;
    }
  }
  if (input.fresh_available) {
    const double value = (0.5 + input.fresh_gain_sum) / (1.0 + input.fresh_starts);
    const double score = value + bonus(input.fresh_starts);
    if (chosen_arm == nullptr || score > chosen.score) {
      chosen.kind = Selection::Kind::kFresh;
      chosen.node = 0;
      chosen.score = score;
    }
  }
  return chosen;
}

}  // namespace kope::agent
