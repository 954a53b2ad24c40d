// Packing: which items go into the prompt, in which form, under one hard token budget.
// Internal to kope_context; pure functions, thread-safe.
//
// Every item has forms, richest first (full, summary, one line), each with its tokens and its
// value (the item's score times how much of it the form keeps). Items belong to groups (the
// prompt's sections), each with a quota and the tokens its heading costs once it holds an item.
//
// The packer starts with nothing and repeatedly takes the move with the highest value gained per
// token: showing an absent item in its shortest form, or showing a present item in its next
// richer form. So an item is shown short before it is shown full, and dropped only when not even
// its shortest form fits. First each group fills within its own quota; then what the groups left
// unused is pooled and every group competes for it. The total (headings included) never exceeds
// the budget. Ties go to the earlier item, so the same input gives the same packing.
#ifndef KOPE_SRC_CONTEXT_PACKING_H_
#define KOPE_SRC_CONTEXT_PACKING_H_

#include <cstdint>
#include <vector>

namespace kope::context::internal {

struct PackForm {
  int64_t tokens = 0;
  double value = 0;
};

struct PackItem {
  int group = 0;
  std::vector<PackForm> forms;  // richest first; at least one
};

struct PackGroup {
  int64_t quota = 0;
  int64_t heading_tokens = 0;
};

struct PackResult {
  std::vector<int> form;              // per item: the index of its form, or -1 when left out
  std::vector<int64_t> group_tokens;  // per group, heading included
  int64_t total = 0;
};

PackResult Pack(const std::vector<PackGroup>& groups, const std::vector<PackItem>& items,
                int64_t budget);

}  // namespace kope::context::internal

#endif  // KOPE_SRC_CONTEXT_PACKING_H_
