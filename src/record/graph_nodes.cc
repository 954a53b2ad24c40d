#include "kope/record/graph_nodes.h"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <sstream>

#include "kope/base/file.h"
#include "kope/base/hash.h"
#include "kope/task/dtype.h"

namespace kope::record {
namespace {

using json = nlohmann::json;

std::string FirstLines(const std::string& text, int lines) {
  size_t pos = 0;
  for (int i = 0; i < lines; ++i) {
    pos = text.find('\n', pos);
    if (pos == std::string::npos) return text;
    ++pos;
  }
  return text.substr(0, pos - 1);
}

}  // namespace

double TaskSize(const Task& task, std::string_view language) {
  const SizeSet& sizes = BenchSizes(task, language);
  double largest = 0;
  for (const auto* list : {&task.inputs, &task.outputs}) {
    for (const TensorSpec& spec : *list) {
      Result<std::vector<int64_t>> shape = ResolveShape(spec, sizes);
      if (!shape.ok()) continue;
      double elements = 1;
      for (int64_t d : *shape) elements *= static_cast<double>(d);
      largest = std::max(largest, elements);
    }
  }
  return largest;
}

std::string KernelSignature(const Task& task) {
  std::string out;
  auto add = [&](const std::vector<TensorSpec>& list) {
    for (size_t i = 0; i < list.size(); ++i) {
      if (i > 0) out += ',';
      out += std::string(DTypeName(list[i].dtype)) + "/" + std::to_string(list[i].shape.size());
    }
  };
  add(task.inputs);
  out += "->";
  add(task.outputs);
  return out;
}

std::string SignatureOfNode(const memory::TaskNode& node) {
  json attrs = json::parse(node.attrs_json, nullptr, false);
  if (!attrs.is_object()) return "";
  auto it = attrs.find("signature");
  return it != attrs.end() && it->is_string() ? it->get<std::string>() : "";
}

Result<memory::TaskNode> TaskNodeFor(const Task& task, std::string_view language) {
  Result<std::string> spec = ReadFileText(task.dir / "task.toml");
  if (!spec.ok()) return Status::IoError(spec.status().message());
  memory::TaskNode node;
  node.name = task.name;
  node.op_family = task.family;
  node.description = task.description;
  node.size = TaskSize(task, language);
  node.spec_hash = ContentHash(*spec);
  json bench = json::object();
  for (const auto& [name, value] : BenchSizes(task, language).sizes) bench[name] = value;
  node.attrs_json =
      json{{"language", language}, {"bench", bench}, {"signature", KernelSignature(task)}}.dump();
  return node;
}

memory::HardwareNode HardwareNodeFor(const HardwareInfo& hw) {
  memory::HardwareNode node;
  node.backend = hw.backend;
  node.device = hw.device;
  node.arch = hw.architecture;
  json attrs = {
      {"cores", hw.cores},           {"bandwidth_bytes_per_s", hw.bandwidth_bytes_per_s},
      {"peak_flops", hw.peak_flops}, {"last_level_cache_bytes", hw.last_level_cache_bytes},
      {"compiler", hw.compiler},     {"measured_at", hw.measured_at}};
  if (hw.memory_bytes > 0) attrs["memory_bytes"] = hw.memory_bytes;
  if (!hw.driver.empty()) attrs["driver"] = hw.driver;
  node.attrs_json = attrs.dump();
  return node;
}

bool IsSuspicious(const Outcome& outcome) {
  return outcome.HasFlag(kFlagFasterThanRoofline) ||
         outcome.HasFlag(kFlagTimedFasterThanVerified) ||
         (outcome.HasFlag(kFlagWallClockMismatch) && outcome.timing_policy == "confirm");
}

std::string OutcomeErrorText(const Outcome& o) {
  if (o.valid()) return "";
  std::string out = o.message;
  for (const Diagnostic& d : o.diagnostics) {
    if (d.severity != "error") continue;
    out += "\n" + d.file + ":" + std::to_string(d.line) + ":" + std::to_string(d.column) +
           ": error: " + FirstLines(d.message, 6);
  }
  if (o.mismatch) {
    const Mismatch& m = *o.mismatch;
    std::ostringstream s;
    s << "\n" << m.reason << " at " << m.size_set << " trial " << m.trial;
    if (!m.tensor.empty()) s << ", " << m.tensor;
    if (m.index >= 0) {
      s << "[" << m.index << "]: expected " << m.expected << ", got " << m.actual << " ("
        << m.mismatches << " of " << m.elements << " elements wrong)";
    }
    out += s.str();
  }
  if (!o.runtime_detail.empty()) out += "\n" + FirstLines(o.runtime_detail, 12);
  return out;
}

memory::OutcomeNode OutcomeNodeFor(const Outcome& o) {
  memory::OutcomeNode node;
  node.stage = "unit";
  node.verdict = std::string(VerdictName(o.verdict));
  node.flagged = IsSuspicious(o);
  if (o.valid()) {
    node.speedup = o.speedup;
    if (o.candidate_time) node.time_ms = o.candidate_time->median_s * 1e3;
    node.roofline = o.roofline_fraction;
  }
  node.error_message = OutcomeErrorText(o);
  node.evidence_json = OutcomeToJson(o, -1);
  return node;
}

Result<memory::EvaluationRecord> EvaluationRecordFor(const Task& task, std::string_view language,
                                                     const Outcome& outcome, std::string source,
                                                     memory::AttemptNode attempt,
                                                     std::string run_label) {
  memory::EvaluationRecord record;
  KOPE_ASSIGN_OR_RETURN(record.task, TaskNodeFor(task, language));
  record.hardware = HardwareNodeFor(outcome.hardware);
  record.run.label = std::move(run_label);
  record.run.compiler = outcome.hardware.compiler;
  record.attempt = std::move(attempt);
  record.source = std::move(source);
  record.outcome = OutcomeNodeFor(outcome);
  return record;
}

std::string TimingPolicyOf(const memory::OutcomeNode& outcome) {
  json e = json::parse(outcome.evidence_json, nullptr, false);
  if (!e.is_object()) return "";
  auto it = e.find("timing_policy");
  return it != e.end() && it->is_string() ? it->get<std::string>() : "";
}

}  // namespace kope::record
