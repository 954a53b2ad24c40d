// One record of an experience pack: parsing, reference checks and applying it to a writer.
// Private to the memory component (exchange.cc is its user).
#ifndef KOPE_SRC_MEMORY_EXCHANGE_RECORD_H_
#define KOPE_SRC_MEMORY_EXCHANGE_RECORD_H_

#include <array>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

#include "kope/base/status.h"
#include "kope/memory/graph_store.h"

namespace kope::memory::exchange {

inline constexpr std::string_view kFormat = "kope-experience";
inline constexpr int kFormatVersion = 1;

enum class RecordType {
  kHeader,
  kTask,
  kHardware,
  kRun,
  kSource,
  kAttempt,
  kOutcome,
  kInsight,
  kEvidence,
  kUsed
};
std::string_view RecordTypeName(RecordType type);

struct Record {
  RecordType type = RecordType::kHeader;
  TaskNode task;
  HardwareNode hardware;
  RunNode run;
  AttemptNode attempt;
  OutcomeNode outcome;
  InsightNode insight;
  EvidenceEdge evidence;
  UsedEdge used;
  std::string source_hash, source_text;
  // References by key: run -> task, hardware; attempt -> run, parent; outcome -> attempt;
  // evidence -> insight, outcome; used -> attempt, target (kind in used.target.kind).
  std::string ref_a, ref_b;
};

// Parses one line; the header must be the first line and only there.
Result<Record> ParseRecord(std::string_view line, bool first_line);

// Notes the record's key in `seen` and checks that its references point to records seen
// earlier or to nodes in `store`.
Status CheckReferences(const Record& record, GraphStore& store,
                       std::array<std::unordered_set<std::string>, 6>& seen,
                       std::unordered_set<std::string>& sources);

// Maps the keys of applied records to their ids in the importing store.
class Resolver {
 public:
  explicit Resolver(GraphWriter& writer) : writer_(writer) {}
  void Note(NodeKind kind, const std::string& key, NodeId id);
  Result<NodeId> Resolve(NodeKind kind, const std::string& key);

 private:
  GraphWriter& writer_;
  std::array<std::unordered_map<std::string, NodeId>, 6> ids_;
};

Status Apply(const Record& record, GraphWriter& writer, Resolver& resolver);

}  // namespace kope::memory::exchange

#endif  // KOPE_SRC_MEMORY_EXCHANGE_RECORD_H_
