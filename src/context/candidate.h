// The context builder's working data: the resolved state of a request and the candidate items
// retrieved for it. Internal to kope_context.
#ifndef KOPE_SRC_CONTEXT_CANDIDATE_H_
#define KOPE_SRC_CONTEXT_CANDIDATE_H_

#include <array>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "kope/context/context_builder.h"
#include "kope/memory/graph_store.h"

namespace kope::context::internal {

// What a request resolves to in the store.
struct State {
  const ContextRequest* request = nullptr;
  TokenCounter counter;
  std::string language;  // "cpp" or "cuda": the hardware's native language (its bench sizes)
  // What the proposer writes: `language`, or "triton" / "torch" (a ModelNew module).
  std::string candidate_language;
  bool model_new = false;      // candidate_language is triton or torch
  std::string problem_source;  // the PyTorch problem, when model_new
  memory::NodeId task_id = 0;
  std::string task_name;
  std::string family;
  std::string description;
  std::string task_attrs_json = "{}";  // only when the task comes from the store
  double size = 0;                     // elements of the largest tensor; 0 unknown
  HardwareInfo hardware;
  memory::NodeId hardware_id = 0;
  memory::NodeId run = 0;
  // The attempt being expanded (empty for a fresh start), and the lineage that ends in it.
  std::optional<memory::AttemptView> node;
  std::vector<memory::AttemptView> lineage;
  std::string base_source;                // the node's source, or the task's baseline; may be empty
  std::string base_fence;                 // base_source's fence language ("cpp", "python", ...)
  std::vector<std::string> query_words;   // the state in words (sorted), for text similarity
  std::vector<std::string> search_words;  // the same, most specific first, for the text search
  memory::UnixMillis now = 0;             // the newest timestamp seen (no clock is read)
};

// One piece of experience that may go into the prompt.
struct Candidate {
  Section section = Section::kInsights;
  std::string kind;
  memory::NodeRef node;

  // What it shows (one of these, by kind).
  std::optional<memory::AttemptView> attempt;
  std::optional<memory::InsightNode> insight;
  std::optional<double> parent_speedup;  // steps: the parent's speedup, for the effect
  std::string origin;                    // exemplars: "task name (family, size, device)"
  std::string error;                     // fixes: the error signature fixed
  memory::NodeId failed_attempt = 0;     // fixes: the attempt that had the error
  int depth = 0;                         // steps: distance from the node (0 = the node)

  // Ranking inputs and result.
  double relevance = 1.0;
  double evidence = 0.0;
  double text_similarity = 0.0;
  memory::UnixMillis time = 0;
  double score = 0.0;
  std::vector<std::string> words;          // for near-duplicate detection
  std::vector<memory::NodeId> duplicates;  // merged near-duplicates, shown as "also ..."
  int64_t order = 0;                       // rendering order within its section

  // Rendered forms, richest first (full, summary, line); equal neighbours collapsed, so a short
  // item may have one form only.
  std::vector<std::pair<Fidelity, std::string>> forms;
  std::vector<int64_t> form_tokens;  // TokenCounter::Bound of each form
  // An exemplar whose summary is its whole difference from the kernel to change (which the
  // prompt shows in full), so that the summary holds its code whole.
  bool summary_is_whole = false;
};

// The fixed quota of each ranked section, as a fraction of what the task leaves of the budget.
struct SectionQuota {
  Section section;
  double fraction;
};
inline constexpr std::array<SectionQuota, 6> kQuotas = {{
    {Section::kProfile, 0.05},
    {Section::kLineage, 0.22},
    {Section::kAlternatives, 0.12},
    {Section::kInsights, 0.24},
    {Section::kExemplars, 0.25},
    {Section::kFailureRules, 0.12},
}};

}  // namespace kope::context::internal

#endif  // KOPE_SRC_CONTEXT_CANDIDATE_H_
