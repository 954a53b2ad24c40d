#include "packing.h"

#include <cstddef>
#include <limits>

namespace kope::context::internal {

PackResult Pack(const std::vector<PackGroup>& groups, const std::vector<PackItem>& items,
                int64_t budget) {
  PackResult result;
  result.form.assign(items.size(), -1);
  result.group_tokens.assign(groups.size(), 0);
  std::vector<int> shown_in_group(groups.size(), 0);

  // One pass of greedy moves; `pooled` lifts the group quotas (the budget still holds).
  auto run = [&](bool pooled) {
    while (true) {
      double best_density = -1;
      size_t best = items.size();
      int64_t best_cost = 0;
      for (size_t i = 0; i < items.size(); ++i) {
        const PackItem& item = items[i];
        const int current = result.form[i];
        if (current == 0 || item.forms.empty()) continue;  // full already, or nothing to show
        const int next = current < 0 ? static_cast<int>(item.forms.size()) - 1 : current - 1;
        const auto g = static_cast<size_t>(item.group);
        int64_t cost = item.forms[next].tokens;
        double gain = item.forms[next].value;
        if (current >= 0) {
          cost -= item.forms[current].tokens;
          gain -= item.forms[current].value;
        } else if (shown_in_group[g] == 0) {
          cost += groups[g].heading_tokens;
        }
        if (gain <= 0 && cost >= 0) continue;
        if (result.total + cost > budget) continue;
        if (!pooled && result.group_tokens[g] + cost > groups[g].quota) continue;
        const double density =
            cost <= 0 ? std::numeric_limits<double>::infinity() : gain / static_cast<double>(cost);
        if (density > best_density) {
          best_density = density;
          best = i;
          best_cost = cost;
        }
      }
      if (best == items.size()) return;
      const PackItem& item = items[best];
      const auto g = static_cast<size_t>(item.group);
      if (result.form[best] < 0) {
        ++shown_in_group[g];
        result.form[best] = static_cast<int>(item.forms.size()) - 1;
      } else {
        --result.form[best];
      }
      result.group_tokens[g] += best_cost;
      result.total += best_cost;
    }
  };
  run(false);
  run(true);
  return result;
}

}  // namespace kope::context::internal
