#include "retrieval_queries.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace kope::memory::bench {
namespace {

[[noreturn]] void Die(const Status& status) {
  std::fprintf(stderr, "memory_bench: %s\n", status.ToString().c_str());
  std::exit(1);
}

template <typename T>
T Check(Result<T> result) {
  if (!result.ok()) Die(result.status());
  return std::move(result).value();
}

size_t Search(GraphStore& store, std::string text, bool all, std::vector<SearchKind> kinds) {
  SearchQuery q;
  q.text = std::move(text);
  q.match_all = all;
  q.kinds = std::move(kinds);
  return Check(store.Search(q)).size();
}

// Lineage, children, the best attempts by task, family and hardware, insights in scope.
void AddGraphQueries(GraphStore& store, QueryArguments& args, std::vector<RetrievalQuery>& out) {
  out.push_back({"lineage (root to a random attempt)",
                 [&] { return Check(store.Lineage(args.Attempt())).size(); }});
  out.push_back({"children (alternatives, with outcomes)",
                 [&] { return Check(store.Children(args.Attempt())).size(); }});
  out.push_back({"best 10 per task", [&] {
                   BestQuery q;
                   q.task_id = args.Task();
                   return Check(store.BestAttempts(q)).size();
                 }});
  out.push_back({"best 10 per op family", [&] {
                   BestQuery q;
                   q.op_family = args.Family();
                   return Check(store.BestAttempts(q)).size();
                 }});
  out.push_back({"best 10 per op family on one hardware", [&] {
                   BestQuery q;
                   q.op_family = args.Family();
                   q.hardware_id = args.Hardware();
                   return Check(store.BestAttempts(q)).size();
                 }});
  out.push_back({"best 10 per hardware", [&] {
                   BestQuery q;
                   q.hardware_id = args.Hardware();
                   return Check(store.BestAttempts(q)).size();
                 }});
  out.push_back({"insights in scope, ranked (top 20)", [&] {
                   InsightQuery q;
                   q.op_family = args.Family();
                   q.backend = "cuda";
                   q.device = "NVIDIA H100";
                   q.arch = "sm_90";
                   q.size = std::pow(10.0, 3 + static_cast<double>(args.Below(5)));
                   return Check(store.FindInsights(q)).size();
                 }});
}

// Full-text search of each kind and of all four, and text relevance of candidates.
void AddSearches(GraphStore& store, QueryArguments& args, std::vector<RetrievalQuery>& out) {
  out.push_back({"search decisions, 2 words, all must match", [&] {
                   return Search(store, std::string(args.ClassWord()) + " " + args.Word(), true,
                                 {SearchKind::kAttempt});
                 }});
  out.push_back({"search decisions, 1 common word",
                 [&] { return Search(store, args.ClassWord(), true, {SearchKind::kAttempt}); }});
  out.push_back({"search decisions, 6 words, any may match",
                 [&] { return Search(store, args.ManyWords(), false, {SearchKind::kAttempt}); }});
  out.push_back({"search insights, 6 words, any may match",
                 [&] { return Search(store, args.ManyWords(), false, {SearchKind::kInsight}); }});
  out.push_back({"search errors, 2 words", [&] {
                   const char* error_words[] = {"undefined",  "expected", "declared",   "resources",
                                                "conversion", "shared",   "overloaded", "illegal"};
                   return Search(store, std::string(error_words[args.Below(8)]) + " error", true,
                                 {SearchKind::kError});
                 }});
  out.push_back(
      {"search all four kinds, 2 words, all must match",
       [&] { return Search(store, std::string(args.ClassWord()) + " " + args.Word(), true, {}); }});
  out.push_back({"search all four kinds, 6 words, any may match",
                 [&] { return Search(store, args.ManyWords(), false, {}); }});
  out.push_back(
      {"text relevance of 50 candidate attempts, 6 words", [&] {
         std::vector<NodeId> candidates;
         for (int i = 0; i < 50; ++i) candidates.push_back(args.Attempt());
         return Check(store.TextRelevance(SearchKind::kAttempt, candidates, args.ManyWords()))
             .size();
       }});
}

// Similar tasks, attempts with a recurring error, and the credit of used items.
void AddRelated(GraphStore& store, QueryArguments& args, std::vector<RetrievalQuery>& out) {
  out.push_back({"similar tasks (top 10)",
                 [&] { return Check(store.SimilarTasks(args.Task(), 10)).size(); }});
  out.push_back({"attempts with a recurring error (top 10)", [&] {
                   return Check(store.AttemptsWithError(args.ErrorSignature(), "", 10)).size();
                 }});
  out.push_back({"usage (credit) of 20 items", [&] {
                   std::vector<NodeRef> items;
                   for (int i = 0; i < 20; ++i)
                     items.push_back({NodeKind::kAttempt, args.Attempt()});
                   return Check(store.Usage(items)).size();
                 }});
}

// The queries one context makes, for a random attempt; the number of results.
size_t OneContext(GraphStore& store, QueryArguments& args) {
  NodeId attempt = args.Attempt();
  AttemptNode a = Check(store.GetAttempt(attempt));
  TaskNode t = Check(store.GetTask(a.task_id));
  size_t n = Check(store.Lineage(attempt)).size() + Check(store.Children(attempt)).size();
  BestQuery best;
  best.task_id = a.task_id;
  best.hardware_id = a.hardware_id;
  n += Check(store.BestAttempts(best)).size();
  best.task_id = 0;
  best.op_family = t.op_family;
  n += Check(store.BestAttempts(best)).size();
  InsightQuery iq;
  iq.op_family = t.op_family;
  iq.backend = "cuda";
  iq.arch = "sm_90";
  iq.size = t.size;
  std::vector<RankedInsight> insights = Check(store.FindInsights(iq));
  n += insights.size();
  std::vector<NodeId> insight_ids;
  for (const RankedInsight& r : insights) insight_ids.push_back(r.insight.id);
  n += Check(
           store.TextRelevance(SearchKind::kInsight, insight_ids, t.description + " " + a.decision))
           .size();
  n += Check(store.SimilarTasks(t.id, 10)).size();
  std::vector<NodeRef> items;
  for (int i = 0; i < 20; ++i) items.push_back({NodeKind::kAttempt, args.Attempt()});
  n += Check(store.Usage(items)).size();
  return n;
}

}  // namespace

std::string QueryArguments::Word() {
  const auto& words = DecisionWords();
  double u = std::uniform_real_distribution<double>(0, 1)(rng_);
  return words[static_cast<size_t>(std::pow(u, 3.0) * static_cast<double>(words.size())) %
               words.size()];
}

const char* QueryArguments::ClassWord() {
  static const char* const kClassWords[] = {"vectorize", "shared", "warp",   "softmax",
                                            "tensor",    "unroll", "layout", "occupancy",
                                            "register",  "fuse",   "simd",   "tile"};
  return kClassWords[rng_() % 12];
}

std::string QueryArguments::ManyWords() {
  return Family() + " " + ClassWord() + " " + Word() + " " + Word() + " " + Word() + " " + Word();
}

std::vector<RetrievalQuery> RetrievalQueries(GraphStore& store, QueryArguments& args) {
  std::vector<RetrievalQuery> queries;
  AddGraphQueries(store, args, queries);
  AddSearches(store, args, queries);
  AddRelated(store, args, queries);
  queries.push_back(
      {"one context: lineage, children, best per task and per family, insights "
       "with text relevance, similar tasks, usage of 20",
       [&] { return OneContext(store, args); }});
  return queries;
}

}  // namespace kope::memory::bench
