// How much an insight's evidence is worth.
//
// Insights are ranked by a lower confidence bound on their support, times their effect size, so
// that one lucky run does not outrank ten consistent ones (MEMORY.md):
//   InsightEvidence = WilsonLowerBound(support, support + contradiction) * effect_size.
// An insight without evidence is worth 0. Pure functions, thread-safe.
#ifndef KOPE_MEMORY_EVIDENCE_H_
#define KOPE_MEMORY_EVIDENCE_H_

#include <cstdint>

#include "kope/memory/graph_store.h"
#include "kope/memory/model.h"

namespace kope::memory {

// The lower bound of the Wilson score interval for `successes` out of `trials` at the normal
// quantile `z` (1.96: 95% two-sided). 0 when trials is 0.
double WilsonLowerBound(int64_t successes, int64_t trials, double z = 1.96);

double InsightEvidence(const InsightNode& insight);

// The factor in (0, 1] by which an insight with `scope` counts for the query (0: excluded,
// for a different backend). See ScopeWeights for its parts.
double ScopeWeight(const InsightScope& scope, const InsightQuery& query);

}  // namespace kope::memory

#endif  // KOPE_MEMORY_EVIDENCE_H_
