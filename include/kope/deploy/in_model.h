// What `kope deploy`'s validation step found inside the model (validation.json, written by
// python/kope_deploy/validate.py), and its record in the experience graph: every candidate tried
// gets an outcome of stage "in_model" on its attempt, beside the unit task's own outcome, and
// the report itself is the workload's deployment record (what `kope serve` shows). The
// verdict is "valid" when the candidate passed the accuracy gate (accepted, or rejected for
// losing end to end), "incorrect" when it failed the gate, "runtime_error" when it could not be
// installed; the reason is the error message (searchable, shown to later context), the gate's
// and the end-to-end figures are its evidence. No speedup is set: an in-model figure never
// ranks among the unit task's speedups.
#ifndef KOPE_DEPLOY_IN_MODEL_H_
#define KOPE_DEPLOY_IN_MODEL_H_

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kope/base/status.h"
#include "kope/memory/graph_store.h"

namespace kope::deploy {

// One request entry's figure in one phase: prefill ms, decode tokens/s, or the whole request's ms.
struct EntryFigure {
  int64_t entry = 0;
  int64_t batch = 0;
  std::string phase;  // "prefill" | "decode" | "request"
  double unpatched = 0;
  double patched = 0;
  double speedup = 0;
  double noise = 0;
  bool win = false;
  bool loss = false;
};

struct InModelTrial {
  std::string task;
  memory::NodeId attempt = 0;
  std::string kind;  // "native", "modelnew"; "" when it could not be loaded
  bool accepted = false;
  bool passed_gate = false;
  bool installed = false;
  std::string reason;
  std::string evidence_json = "{}";  // {"gate": ..., "e2e": ...}
  std::vector<EntryFigure> e2e;      // the patch alone, end to end (where it was measured)
};

struct Validation {
  std::string workload;
  std::vector<InModelTrial> trials;  // in the order tried
  std::vector<std::string> patches;  // the accepted patches, combined
  std::vector<std::string> dropped;  // "task: why" for patches dropped when combined
  std::vector<EntryFigure> e2e;      // all accepted patches together
  std::string artifact;              // "" when nothing was accepted
  std::string report_json = "{}";    // validation.json itself
};

Result<Validation> ParseValidation(std::string_view text, std::string_view file);
Result<Validation> ReadValidation(const std::filesystem::path& path);

// Records an in_model outcome for every trial with an attempt, and the whole report as a
// deployment of workload `workload_id` (where it is not 0), in one transaction; how many trials
// it recorded. Recording the same figures again writes nothing new (the outcome key holds the
// evidence; the deployment key, the report).
Result<int> RecordInModel(memory::GraphStore& store, const Validation& validation,
                          memory::NodeId workload_id = 0);

// The terminal summary: per task what was tried and why it was accepted or rejected, then the
// end-to-end figures of the accepted patches together.
std::string ValidationSummary(const Validation& validation);

}  // namespace kope::deploy

#endif  // KOPE_DEPLOY_IN_MODEL_H_
