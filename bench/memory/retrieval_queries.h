// The retrieval queries the memory benchmark times (those the context manager makes), with their
// arguments drawn from a generated graph by one random stream: the same queries in every run.
#ifndef KOPE_BENCH_MEMORY_RETRIEVAL_QUERIES_H_
#define KOPE_BENCH_MEMORY_RETRIEVAL_QUERIES_H_

#include <cstdint>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "kope/memory/graph_store.h"
#include "synthetic_graph.h"

namespace kope::memory::bench {

// Arguments drawn from the graph's ids and words; each call draws the next.
class QueryArguments {
 public:
  explicit QueryArguments(GraphIds ids) : ids_(std::move(ids)) {}

  NodeId Attempt() { return Pick(ids_.attempts); }
  NodeId Task() { return Pick(ids_.tasks); }
  NodeId Hardware() { return Pick(ids_.hardware); }
  std::string Family() { return Pick(ids_.families); }
  std::string ErrorSignature() { return Pick(ids_.error_signatures); }
  // A number in [0, n).
  uint64_t Below(uint64_t n) { return rng_() % n; }
  // A word of the decisions, the common ones more often.
  std::string Word();
  // A word of the decision classes ("vectorize", "tile", ...).
  const char* ClassWord();
  // Six words: a family, a class word and four decision words.
  std::string ManyWords();

 private:
  template <typename T>
  T Pick(const std::vector<T>& v) {
    return v[rng_() % v.size()];
  }

  GraphIds ids_;
  std::mt19937_64 rng_{7};
};

// One row of the latency table: `run` makes the query once and returns its number of results;
// it ends the process on an error.
struct RetrievalQuery {
  std::string name;
  std::function<size_t()> run;
};

// The queries in the table's order. They read `store` and draw from `args`, which must outlive
// them.
std::vector<RetrievalQuery> RetrievalQueries(GraphStore& store, QueryArguments& args);

}  // namespace kope::memory::bench

#endif  // KOPE_BENCH_MEMORY_RETRIEVAL_QUERIES_H_
