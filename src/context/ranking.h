// Ranking: relevance x evidence x usefulness x recency, then diversity. Internal to kope_context.
#ifndef KOPE_SRC_CONTEXT_RANKING_H_
#define KOPE_SRC_CONTEXT_RANKING_H_

#include <vector>

#include "candidate.h"
#include "kope/base/status.h"
#include "kope/memory/graph_store.h"

namespace kope::context::internal {

// The weights of the ranking (docs/CONTEXT.md explains each).
struct RankingWeights {
  double text_floor = 0.6;   // relevance x (text_floor + (1 - text_floor) x text similarity)
  double credit_gain = 4.0;  // usefulness = exp(clamp(credit_gain x mean credit, +-limit))
  double credit_limit = 1.0;
  double exploration = 0.15;    // bonus exploration / sqrt(1 + times shown)
  double recency_floor = 0.85;  // recency = floor + (1 - floor) x 2^(-age / half life)
  double recency_half_life_days = 30;
  double mmr_lambda = 0.7;  // maximal marginal relevance: lambda x score - (1 - lambda) x sim
  double duplicate_similarity = 0.8;  // at or above: a near-duplicate, merged into the better one
  double redundancy_penalty = 0.5;    // score x (1 - penalty x similarity to those ranked above)
};

// Scores every candidate. Ranked sections (insights, exemplars, failure rules) use the usage
// statistics of their targets (one GraphStore::Usage call); lineage steps, alternatives and the
// best get structural scores (closeness to the node, the size of their effect, failure).
Status ScoreCandidates(memory::GraphStore& store, const State& state,
                       std::vector<Candidate>& candidates, const RankingWeights& weights = {});

// Orders each section by maximal marginal relevance, merges near-duplicates (same source, or
// word similarity at or above duplicate_similarity) into the better item's `duplicates`, lowers
// the score of items similar to better ones, and keeps at most a section's limit (24 insights, 10
// exemplars, 12 failure rules, 40 alternatives, 64 lineage steps).
// The result is sorted by section, then by rank.
void Diversify(std::vector<Candidate>& candidates, const RankingWeights& weights = {});

}  // namespace kope::context::internal

#endif  // KOPE_SRC_CONTEXT_RANKING_H_
