// A synthetic experience graph of realistic shape for the memory benchmark: op families with
// tasks over five decades of sizes, episodes that branch (each attempt derives from an earlier
// one of its run), kernels of about 1.5 KB that change a few lines per step, decisions written
// from the decision-class vocabulary plus everyday words, failed attempts with compiler errors,
// insights with evidence, and used edges with credit. Deterministic for a seed.
#ifndef KOPE_BENCH_MEMORY_SYNTHETIC_GRAPH_H_
#define KOPE_BENCH_MEMORY_SYNTHETIC_GRAPH_H_

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "kope/memory/graph_store.h"

namespace kope::memory::bench {

struct GraphShape {
  int families = 40;
  int tasks_per_family = 25;
  int runs_per_task = 10;
  int attempts_per_run = 49;
  int insights = 20000;
  double used_per_attempt = 0.5;
  int attempts_per_transaction = 10000;
  uint32_t seed = 20260101;
  // Nodes: hardware + tasks + runs + attempts + outcomes + insights.
  int64_t Nodes() const;
};

// The words decisions are made of (a few thousand), shared with the query generator.
const std::vector<std::string>& DecisionWords();
std::string FamilyName(int family);
// A decision text for class `cls` (an index into the vocabulary) with random extra words.
std::string MakeDecision(std::mt19937_64& rng, int cls);
// A kernel of about 1.5 KB for a task, and a copy with `changes` lines rewritten.
std::string MakeKernel(std::mt19937_64& rng, int task);
std::string Mutate(std::mt19937_64& rng, const std::string& kernel, int changes);

// Writes the graph into an empty store. Progress goes to stderr.
Status Generate(GraphStore& store, const GraphShape& shape);

// What the generated graph holds, for picking query arguments.
struct GraphIds {
  std::vector<NodeId> tasks, hardware, attempts;
  std::vector<std::string> families;
  std::vector<std::string> error_signatures;
};
Result<GraphIds> CollectIds(GraphStore& store);

}  // namespace kope::memory::bench

#endif  // KOPE_BENCH_MEMORY_SYNTHETIC_GRAPH_H_
