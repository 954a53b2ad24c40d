// Test support for the context builder: temporary stores and a small graph-building vocabulary.
#ifndef KOPE_SRC_CONTEXT_TEST_GRAPH_H_
#define KOPE_SRC_CONTEXT_TEST_GRAPH_H_

#include <gtest/gtest.h>
#include <stdlib.h>

#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "kope/context/context_builder.h"
#include "kope/memory/graph_store.h"
#include "kope/memory/sqlite/sqlite_store.h"

namespace kope::context::testing {

using memory::NodeId;

class TempDir {
 public:
  TempDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "kope-context-XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr) std::abort();
    path_ = pattern;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path operator/(const std::string& name) const { return path_ / name; }

 private:
  std::filesystem::path path_;
};

#define KOPE_ASSERT_OK(expr)                                             \
  do {                                                                   \
    const ::kope::Status kope_test_status_ = (expr);                     \
    ASSERT_TRUE(kope_test_status_.ok()) << kope_test_status_.ToString(); \
  } while (0)

template <typename T>
T ValueOrDie(Result<T> result) {
  if (!result.ok()) {
    ADD_FAILURE() << result.status().ToString();
    std::abort();
  }
  return std::move(result).value();
}

inline std::unique_ptr<memory::GraphStore> OpenStore(const std::filesystem::path& path) {
  return ValueOrDie(memory::OpenSqliteStore(path));
}

// A kernel source of `lines` lines that differs by `tag`.
inline std::string Kernel(const std::string& tag, int lines = 12) {
  std::string s = "#include \"kope/kernel.h\"\n// " + tag + "\n";
  s += "extern \"C\" int kope_kernel(const kope_tensor* in, int n_in, kope_tensor* out, int n_out,"
       " void* stream) {\n";
  for (int i = 0; i < lines; ++i) {
    s += "  float v" + std::to_string(i) + " = in[0].shape[0] * " + std::to_string(i) + "; // " +
         tag + "\n";
  }
  return s + "  return 0;\n}\n";
}

struct AttemptSpec {
  NodeId run = 0;
  NodeId parent = 0;
  std::string decision = "baseline";
  std::string source;  // empty: Kernel(decision)
  std::string verdict = "valid";
  std::optional<double> speedup = 1.0;
  std::string error;
  std::string evidence_json = "{}";
  std::vector<std::string> classes;
};

inline AttemptSpec Valid(NodeId run, NodeId parent, std::string decision, double speedup,
                         std::string source = "") {
  AttemptSpec spec;
  spec.run = run;
  spec.parent = parent;
  spec.decision = std::move(decision);
  spec.speedup = speedup;
  spec.source = std::move(source);
  return spec;
}

inline AttemptSpec Failed(NodeId run, NodeId parent, std::string decision, std::string verdict,
                          std::string error) {
  AttemptSpec spec;
  spec.run = run;
  spec.parent = parent;
  spec.decision = std::move(decision);
  spec.verdict = std::move(verdict);
  spec.speedup = std::nullopt;
  spec.error = std::move(error);
  return spec;
}

struct InsightSpec {
  std::string kind = "lesson";
  std::string text;
  memory::InsightScope scope;
  std::vector<std::string> classes;
  int support = 0;
  int contradiction = 0;
  double effect = 1.5;
};

// Writes nodes through one GraphWriter (inside a GraphStore::Write body). Evidence edges point
// at outcomes of a run made for the purpose, one outcome per edge.
class GraphBuilder {
 public:
  explicit GraphBuilder(memory::GraphWriter& writer) : w_(writer) {}

  Result<NodeId> Hardware(const std::string& backend, const std::string& device,
                          const std::string& arch) {
    memory::HardwareNode h;
    h.backend = backend;
    h.device = device;
    h.arch = arch;
    return w_.PutHardware(h);
  }
  Result<NodeId> Task(const std::string& name, const std::string& family, double size,
                      const std::string& description = "") {
    memory::TaskNode t;
    t.name = name;
    t.op_family = family;
    t.size = size;
    t.description = description;
    return w_.PutTask(t);
  }
  Result<NodeId> Run(NodeId task, NodeId hardware, memory::UnixMillis started_at = 0) {
    memory::RunNode r;
    r.task_id = task;
    r.hardware_id = hardware;
    r.label = "test";
    r.started_at = started_at;
    return w_.PutRun(r);
  }
  Result<NodeId> Attempt(const AttemptSpec& spec) {
    memory::AttemptNode a;
    a.run_id = spec.run;
    a.parent_id = spec.parent;
    a.decision = spec.decision;
    a.proposer = "test";
    a.classes = spec.classes;
    KOPE_ASSIGN_OR_RETURN(
        NodeId id, w_.PutAttempt(a, spec.source.empty() ? Kernel(spec.decision) : spec.source));
    memory::OutcomeNode o;
    o.attempt_id = id;
    o.verdict = spec.verdict;
    if (spec.verdict == memory::kVerdictValid) {
      o.speedup = spec.speedup;
      if (spec.speedup) o.time_ms = 1.0 / *spec.speedup;
    }
    o.error_message = spec.error;
    o.evidence_json = spec.evidence_json;
    KOPE_RETURN_IF_ERROR(w_.PutOutcome(o).status());
    return id;
  }
  Result<NodeId> Insight(const InsightSpec& spec) {
    memory::InsightNode i;
    i.kind = spec.kind;
    i.text = spec.text;
    i.scope = spec.scope;
    i.classes = spec.classes;
    KOPE_ASSIGN_OR_RETURN(NodeId id, w_.PutInsight(i));
    for (int k = 0; k < spec.support + spec.contradiction; ++k) {
      KOPE_ASSIGN_OR_RETURN(NodeId outcome, EvidenceOutcome());
      memory::EvidenceEdge e;
      e.insight_id = id;
      e.outcome_id = outcome;
      e.relation = k < spec.support ? memory::EvidenceRelation::kSupportedBy
                                    : memory::EvidenceRelation::kContradictedBy;
      e.effect = spec.effect;
      KOPE_RETURN_IF_ERROR(w_.AddEvidence(e).status());
    }
    return id;
  }

 private:
  // A fresh outcome for an evidence edge.
  Result<NodeId> EvidenceOutcome() {
    if (evidence_run_ == 0) {
      KOPE_ASSIGN_OR_RETURN(NodeId hw, Hardware("cpu", "evidence", "none"));
      KOPE_ASSIGN_OR_RETURN(NodeId task, Task("evidence", "evidence", 1));
      KOPE_ASSIGN_OR_RETURN(evidence_run_, Run(task, hw));
    }
    memory::AttemptNode a;
    a.run_id = evidence_run_;
    a.decision = "evidence " + std::to_string(++evidence_count_);
    a.proposer = "test";
    KOPE_ASSIGN_OR_RETURN(NodeId id,
                          w_.PutAttempt(a, "// evidence " + std::to_string(evidence_count_)));
    memory::OutcomeNode o;
    o.attempt_id = id;
    o.verdict = "valid";
    o.speedup = 1.0;
    return w_.PutOutcome(o);
  }

  memory::GraphWriter& w_;
  NodeId evidence_run_ = 0;
  int evidence_count_ = 0;
};

// Finds the item that came from `ref` (nullptr when absent).
inline const ContextItem* FindItem(const BuiltContext& built, const memory::NodeRef& ref) {
  for (const ContextItem& item : built.items) {
    if (item.node == ref) return &item;
  }
  return nullptr;
}

// Position of the item from `ref` in the prompt order; -1 when absent.
inline int Position(const BuiltContext& built, const memory::NodeRef& ref) {
  for (size_t i = 0; i < built.items.size(); ++i) {
    if (built.items[i].node == ref) return static_cast<int>(i);
  }
  return -1;
}

}  // namespace kope::context::testing

#endif  // KOPE_SRC_CONTEXT_TEST_GRAPH_H_
