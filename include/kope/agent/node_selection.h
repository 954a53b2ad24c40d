// Node selection: which node of the graph to expand next, a bandit over nodes.
//
// The arms are the valid attempts the episode knows (its own, and the best earlier ones of the
// same task and hardware) plus one "fresh start" arm. Each arm's score is UCB-style:
//
//   node:   (speedup / best) * (1 + mean gain of its children)  +  c * sqrt(ln(1 + N) / (1 + n))
//   fresh:  (0.5 + sum of fresh-start gains) / (1 + fresh starts)  +  c * sqrt(ln(1 + N) / (1 + f))
//
// where a child's gain is min(1, max(0, child speedup / node speedup - 1)) (0 for a failed
// child), n is the node's expansions, f the fresh starts so far, and N all expansions. So the
// best node is refined while that pays; a node whose expansions keep failing gives way to an
// earlier, slightly slower branch; and a fresh start is tried when nothing else is promising. A
// fresh start's gain is min(1, its speedup / the best speedup before it). Exhausted arms (the
// proposer has nothing new from them) are never chosen. Ties go to the higher speedup, then to
// the lower node id, so the same state gives the same choice. Pure; thread-safe.
#ifndef KOPE_AGENT_NODE_SELECTION_H_
#define KOPE_AGENT_NODE_SELECTION_H_

#include <string>
#include <vector>

#include "kope/memory/model.h"

namespace kope::agent {

struct NodeArm {
  memory::NodeId id = 0;
  double speedup = 0;   // of its latest valid outcome
  int expansions = 0;   // children proposed from it (evaluated or not)
  double gain_sum = 0;  // sum of its children's gains
  bool exhausted = false;
};

struct SelectionInput {
  std::vector<NodeArm> nodes;
  bool fresh_available = false;  // the proposer can still start afresh
  int fresh_starts = 0;
  double fresh_gain_sum = 0;
  double exploration = 0.3;  // c
};

struct Selection {
  enum class Kind { kNode, kFresh, kNone };
  Kind kind = Kind::kNone;
  memory::NodeId node = 0;  // kNode
  double score = 0;
};

Selection SelectNode(const SelectionInput& input);

// A child's gain over its parent, as defined above (0 when either speedup is not positive).
double ChildGain(double parent_speedup, double child_speedup);

}  // namespace kope::agent

#endif  // KOPE_AGENT_NODE_SELECTION_H_
