// The offline proposer: parameter tuning and transfer of recorded kernels, no LLM needed.
//
// From a node, it proposes the node's source with one tunable (tunables.h) moved to a
// neighbouring value. The moves are tried in this order: first the move that continues the
// parent's own move when that move helped; then the direction that the recorded tuning insights
// of this op family on this hardware favour ("Larger NAME is faster ...", see reflection.h);
// then source order, towards the end of each value list before towards its start. Moves whose
// source the graph already holds for this task and hardware are skipped; when none is left the
// node is exhausted.
//
// A fresh start is, in this order:
//   1. transfer: the best valid kernels recorded for the same op family on this hardware for
//      other tasks (at most `max_transfers`, best first, only from tasks with the same kernel
//      signature: input and output dtypes and ranks), taken as they are and then re-tuned here;
//   2. pack kernels: the valid kernels of imported experience packs (runs whose config holds
//      a pack kernel spec, kope/pack/manifest.h) of the same op family, measured on any
//      hardware, whose input and output roles fit the task (kope/pack/adapter.h): each through
//      an adapter source that hands the task's tensors over in the kernel's order and sets its
//      attributes; kernels whose op the task's name mentions first (at most `max_transfers`);
//   3. seeds: the files in the task's folder written in the candidate language (.cc, .cpp,
//      .cxx for cpp; .cu for cuda; .py defining a ModelNew in that language for triton and
//      torch) that carry `kope:tune` annotations, in name order (the baseline too, when it is
//      annotated).
// Both are in the request's candidate language (candidate_language.h; transfers whose source is
// in another language are skipped).
// Starts already recorded for this task and hardware are skipped. The task format has no seed
// field: an annotated kernel beside task.toml is the convention.
//
// Thread safety: as Proposer's (one episode, one thread). It keeps no state between calls:
// everything it knows comes from the graph and the task folder, so a resumed episode proposes
// exactly what an uninterrupted one would have.
#ifndef KOPE_AGENT_OFFLINE_PROPOSER_H_
#define KOPE_AGENT_OFFLINE_PROPOSER_H_

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "kope/agent/proposer.h"
#include "kope/agent/tunables.h"

namespace kope::agent {

struct OfflineProposerOptions {
  bool transfer = true;      // start from other tasks' best kernels of the family
  int max_transfers = 3;     // how many of them
  bool seeds = true;         // start from the annotated kernels in the task folder
  bool use_insights = true;  // order tuning moves by recorded tuning insights
};

std::unique_ptr<Proposer> CreateOfflineProposer(OfflineProposerOptions options = {});

// The seed kernels of a task for `language` ("cpp", "cuda", "triton", "torch"), as the rule
// above finds them (paths, name order).
std::vector<std::filesystem::path> FindSeedKernels(const Task& task, std::string_view language);

// The tuning moves from `source`, in the order the proposer tries them (before skipping the
// recorded ones). `parent_decision` is the node's own decision and `parent_improved` whether it
// helped; `insights` are the family's tuning insights. Exposed for tests.
std::vector<TuningMove> OrderMoves(const std::vector<Tunable>& tunables,
                                   std::string_view parent_decision, bool parent_improved,
                                   const std::vector<memory::RankedInsight>& insights);

}  // namespace kope::agent

#endif  // KOPE_AGENT_OFFLINE_PROPOSER_H_
