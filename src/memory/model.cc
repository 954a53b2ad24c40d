#include "kope/memory/model.h"

#include <unistd.h>

#include <atomic>
#include <charconv>
#include <chrono>
#include <string>

#include "kope/base/hash.h"

namespace kope::memory {
namespace {

struct KindName {
  NodeKind kind;
  std::string_view name;
  char short_name;
};

constexpr KindName kKindNames[] = {
    {NodeKind::kTask, "task", 't'},         {NodeKind::kHardware, "hardware", 'h'},
    {NodeKind::kRun, "run", 'r'},           {NodeKind::kAttempt, "attempt", 'a'},
    {NodeKind::kOutcome, "outcome", 'o'},   {NodeKind::kInsight, "insight", 'i'},
    {NodeKind::kWorkload, "workload", 'w'},
};

std::string FormatDouble(double value) {
  char buffer[32];
  auto [end, ec] = std::to_chars(buffer, buffer + sizeof(buffer), value);
  return ec == std::errc() ? std::string(buffer, end) : std::string("nan");
}

Result<NodeId> ParseId(std::string_view text, std::string_view whole) {
  NodeId id = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), id);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size() || id <= 0) {
    return Status::InvalidArgument("bad node reference '" + std::string(whole) +
                                   "': expected KIND:ID (e.g. attempt:42) or a positive number");
  }
  return id;
}

}  // namespace

std::string_view NodeKindName(NodeKind kind) {
  for (const KindName& k : kKindNames) {
    if (k.kind == kind) return k.name;
  }
  return "unknown";
}

Result<NodeKind> ParseNodeKind(std::string_view name) {
  for (const KindName& k : kKindNames) {
    if (k.name == name) return k.kind;
  }
  if (name == "hw") return NodeKind::kHardware;
  return Status::InvalidArgument(
      "unknown node kind '" + std::string(name) +
      "' (expected task, hardware, run, attempt, outcome, insight or workload)");
}

std::string FormatNodeRef(const NodeRef& ref) {
  return std::string(NodeKindName(ref.kind)) + ":" + std::to_string(ref.id);
}

Result<NodeRef> ParseNodeRef(std::string_view text) {
  size_t colon = text.find(':');
  if (colon != std::string_view::npos) {
    KOPE_ASSIGN_OR_RETURN(NodeKind kind, ParseNodeKind(text.substr(0, colon)));
    KOPE_ASSIGN_OR_RETURN(NodeId id, ParseId(text.substr(colon + 1), text));
    return NodeRef{kind, id};
  }
  if (!text.empty() && text[0] >= 'a' && text[0] <= 'z') {
    for (const KindName& k : kKindNames) {
      if (k.short_name == text[0]) {
        KOPE_ASSIGN_OR_RETURN(NodeId id, ParseId(text.substr(1), text));
        return NodeRef{k.kind, id};
      }
    }
  }
  KOPE_ASSIGN_OR_RETURN(NodeId id, ParseId(text, text));
  return NodeRef{NodeKind::kAttempt, id};
}

bool IsKnownVerdict(std::string_view verdict) {
  return verdict == kVerdictCompileError || verdict == kVerdictRuntimeError ||
         verdict == kVerdictCrash || verdict == kVerdictTimeout || verdict == kVerdictIncorrect ||
         verdict == kVerdictValid;
}

std::string_view EvidenceRelationName(EvidenceRelation relation) {
  return relation == EvidenceRelation::kSupportedBy ? "supported_by" : "contradicted_by";
}

Result<EvidenceRelation> ParseEvidenceRelation(std::string_view name) {
  if (name == "supported_by") return EvidenceRelation::kSupportedBy;
  if (name == "contradicted_by") return EvidenceRelation::kContradictedBy;
  return Status::InvalidArgument("unknown evidence relation '" + std::string(name) +
                                 "' (expected supported_by or contradicted_by)");
}

std::string TaskKey(std::string_view name, std::string_view spec_hash) {
  return ContentHash({"task", name, spec_hash});
}

std::string HardwareKey(std::string_view backend, std::string_view device, std::string_view arch) {
  return ContentHash({"hardware", backend, device, arch});
}

std::string WorkloadKey(std::string_view name, std::string_view workload_hash) {
  return ContentHash({"workload", name, workload_hash});
}

std::string DeploymentKey(std::string_view workload_key, std::string_view report_json) {
  return ContentHash({"deployment", workload_key, report_json});
}

// Attempt and outcome keys start with the first half of their run's key, so that the nodes of
// one episode sit together in the key index (a random key would make every insert touch a
// different index page); the second half is the content hash.
std::string AttemptKey(std::string_view run_key, std::string_view parent_key,
                       std::string_view source_hash, std::string_view decision,
                       std::string_view proposer) {
  std::string hash = ContentHash({"attempt", run_key, parent_key, source_hash, decision, proposer});
  if (run_key.size() < 16) return hash;
  return std::string(run_key.substr(0, 16)) + hash.substr(0, 16);
}

std::string OutcomeKey(std::string_view attempt_key, std::string_view stage,
                       std::string_view verdict, std::string_view evidence_json,
                       std::string_view error_message) {
  std::string hash =
      ContentHash({"outcome", attempt_key, stage, verdict, evidence_json, error_message});
  if (attempt_key.size() < 16) return hash;
  return std::string(attempt_key.substr(0, 16)) + hash.substr(0, 16);
}

std::string InsightKey(std::string_view kind, const InsightScope& scope,
                       const std::vector<std::string>& classes, std::string_view text) {
  std::string joined;
  for (const std::string& c : classes) joined += c + " ";
  std::string size_min = FormatDouble(scope.size_min);
  std::string size_max = FormatDouble(scope.size_max);
  return ContentHash({"insight", kind, scope.op_family, scope.backend, scope.device, scope.arch,
                      scope.compiler, size_min, size_max, joined, text});
}

std::string NewRunKey(std::string_view task_key, std::string_view hardware_key,
                      UnixMillis started_at) {
  static std::atomic<uint64_t> counter{0};
  std::string time = std::to_string(started_at);
  std::string pid = std::to_string(::getpid());
  std::string count = std::to_string(counter.fetch_add(1));
  std::string clock = std::to_string(std::chrono::steady_clock::now().time_since_epoch().count());
  return ContentHash({"run", task_key, hardware_key, time, pid, count, clock});
}

bool IsValidKey(std::string_view key) {
  if (key.size() != 32) return false;
  for (char c : key) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

UnixMillis NowMillis() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace kope::memory
