#include "kope/agent/reflection.h"

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

#include "kope/agent/tunables.h"

namespace kope::agent {
namespace {

using memory::EvidenceEdge;
using memory::EvidenceRelation;
using memory::InsightNode;
using memory::NodeId;
using memory::OutcomeNode;

constexpr std::string_view kLarger = "Larger ";
constexpr std::string_view kIsFaster = " is faster for ";
constexpr std::string_view kRecurring = "Recurring error: ";
constexpr std::string_view kFixedBy = "Fixed by: ";

// spread / sqrt(samples) of the candidate's timing, from the evaluator's record.
double TimingUncertainty(const OutcomeNode& o) {
  nlohmann::json e = nlohmann::json::parse(o.evidence_json, nullptr, false);
  if (!e.is_object()) return 0;
  auto t = e.find("candidate_time");
  if (t == e.end() || !t->is_object()) return 0;
  const double spread = t->value("spread", 0.0);
  const double samples = t->value("samples", 0.0);
  if (spread <= 0 || samples < 1) return 0;
  return spread / std::sqrt(samples);
}

bool IsValid(const OutcomeNode& o) {
  return o.verdict == memory::kVerdictValid && o.speedup && *o.speedup > 0;
}

std::string FirstLine(std::string_view text, size_t max_chars) {
  size_t nl = text.find('\n');
  std::string line(text.substr(0, nl));
  if (line.size() > max_chars) line = line.substr(0, max_chars - 3) + "...";
  return line;
}

class Reflector {
 public:
  Reflector(memory::GraphStore& store, memory::GraphWriter& writer, const ReflectionInput& in,
            ReflectionResult* result)
      : store_(store), writer_(writer), in_(in), result_(result) {}

  // Adds `relation` evidence from the attempt's outcome to the insight (kind, classes, text).
  Status Evidence(std::string_view kind, const memory::InsightScope& scope,
                  std::vector<std::string> classes, std::string text, EvidenceRelation relation,
                  double effect, NodeId outcome_id) {
    InsightNode insight;
    insight.kind = std::string(kind);
    insight.scope = scope;
    insight.classes = std::move(classes);
    insight.text = std::move(text);
    KOPE_ASSIGN_OR_RETURN(NodeId id, writer_.PutInsight(insight));
    EvidenceEdge edge;
    edge.insight_id = id;
    edge.outcome_id = outcome_id;
    edge.relation = relation;
    edge.effect = effect > 0 ? effect : 1.0;
    KOPE_ASSIGN_OR_RETURN(bool added, writer_.AddEvidence(edge));
    if (added) {
      (relation == EvidenceRelation::kSupportedBy ? result_->supported : result_->contradicted)++;
    }
    if (std::find(result_->insights.begin(), result_->insights.end(), id) ==
        result_->insights.end()) {
      result_->insights.push_back(id);
    }
    last_insight_ = id;
    return Status::Ok();
  }

  Status FailureRules(const memory::InsightScope& scope) {
    const OutcomeNode& out = in_.outcome;
    if (!IsValid(out) && !out.error_signature.empty()) {
      KOPE_ASSIGN_OR_RETURN(std::vector<memory::AttemptView> seen,
                            store_.AttemptsWithError(out.error_signature, in_.task.op_family, 20));
      if (seen.size() >= 2) {
        for (const memory::AttemptView& v : seen) {
          if (!v.outcome) continue;
          KOPE_RETURN_IF_ERROR(Evidence(memory::kInsightFailureRule, scope, {},
                                        std::string(kRecurring) + out.error_signature,
                                        EvidenceRelation::kSupportedBy, 1.0, v.outcome->id));
        }
        result_->failure_rules++;
      }
    }
    // A fix: a valid attempt derived from a failed one.
    if (IsValid(out) && in_.parent && in_.parent->outcome && !IsValid(*in_.parent->outcome) &&
        !in_.parent->outcome->error_signature.empty()) {
      const OutcomeNode& failed = *in_.parent->outcome;
      KOPE_RETURN_IF_ERROR(Evidence(memory::kInsightFailureRule, scope, {},
                                    std::string(kRecurring) + failed.error_signature,
                                    EvidenceRelation::kSupportedBy, 1.0, failed.id));
      KOPE_ASSIGN_OR_RETURN(InsightNode rule, store_.GetInsight(last_insight_));
      std::string fix = std::string(kFixedBy) + FirstLine(in_.attempt.decision, 200);
      if (rule.text.find(fix) == std::string::npos) {
        KOPE_RETURN_IF_ERROR(writer_.UpdateInsightText(rule.id, rule.text + "\n" + fix));
        result_->fixes++;
      }
    }
    return Status::Ok();
  }

 private:
  memory::GraphStore& store_;
  memory::GraphWriter& writer_;
  const ReflectionInput& in_;
  ReflectionResult* result_;
  NodeId last_insight_ = 0;
};

}  // namespace

std::string TuningInsightText(std::string_view tunable, std::string_view op_family) {
  return std::string(kLarger) + std::string(tunable) + std::string(kIsFaster) +
         std::string(op_family) + " kernels";
}

std::optional<std::string> TunableOfInsight(std::string_view text) {
  if (text.substr(0, kLarger.size()) != kLarger) return std::nullopt;
  size_t end = text.find(kIsFaster);
  if (end == std::string_view::npos || end <= kLarger.size()) return std::nullopt;
  return std::string(text.substr(kLarger.size(), end - kLarger.size()));
}

memory::InsightScope ScopeFor(const memory::TaskNode& task, const memory::HardwareNode& hardware,
                              std::string_view compiler) {
  memory::InsightScope scope;
  scope.op_family = task.op_family;
  scope.backend = hardware.backend;
  scope.device = hardware.device;
  scope.arch = hardware.arch;
  scope.compiler = std::string(compiler);
  if (task.size >= 1) {
    const double decade = std::floor(std::log10(task.size));
    scope.size_min = std::pow(10.0, decade);
    scope.size_max = std::pow(10.0, decade + 1);
  }
  return scope;
}

double RelativeNoise(const OutcomeNode& a, const OutcomeNode& b, double min_noise) {
  return std::max(min_noise, TimingUncertainty(a) + TimingUncertainty(b));
}

Result<ReflectionResult> Reflect(memory::GraphStore& store, memory::GraphWriter& writer,
                                 const ReflectionInput& in, const ReflectionOptions& options) {
  ReflectionResult result;
  Reflector reflector(store, writer, in, &result);
  const OutcomeNode& out = in.outcome;
  const memory::InsightScope scope = ScopeFor(in.task, in.hardware, in.compiler);
  const bool child_valid = IsValid(out);
  const OutcomeNode* parent_out = in.parent && in.parent->outcome ? &*in.parent->outcome : nullptr;
  const bool parent_valid = parent_out != nullptr && IsValid(*parent_out);

  double ratio = 1;
  double noise = options.min_noise;
  if (child_valid && parent_valid) {
    ratio = *out.speedup / *parent_out->speedup;
    noise = RelativeNoise(out, *parent_out, options.min_noise);
  }
  const bool faster = child_valid && parent_valid && ratio > 1 + noise;
  const bool slower = parent_valid && (!child_valid || ratio < 1 / (1 + noise));
  result.improved = in.parent ? faster : child_valid && *out.speedup > 1 + options.min_noise;

  if (parent_valid) {
    std::optional<TuningMove> move = ParseMoveDescription(in.attempt.decision);
    if (move && move->numeric_direction != 0) {
      const int d = move->numeric_direction;
      const std::string text = TuningInsightText(move->name, in.task.op_family);
      if (child_valid) {
        const double larger = d > 0 ? ratio : 1 / ratio;  // factor in favour of the larger value
        if (larger > 1 + noise) {
          KOPE_RETURN_IF_ERROR(reflector.Evidence(memory::kInsightLesson, scope,
                                                  {"tune-parameters"}, text,
                                                  EvidenceRelation::kSupportedBy, larger, out.id));
        } else if (larger < 1 / (1 + noise)) {
          KOPE_RETURN_IF_ERROR(
              reflector.Evidence(memory::kInsightLesson, scope, {"tune-parameters"}, text,
                                 EvidenceRelation::kContradictedBy, 1 / larger, out.id));
        }
      } else if (d > 0) {
        KOPE_RETURN_IF_ERROR(reflector.Evidence(memory::kInsightLesson, scope, {"tune-parameters"},
                                                text, EvidenceRelation::kContradictedBy, 1.0,
                                                out.id));
      }
    } else if (!move && (faster || slower)) {
      for (const std::string& cls : in.attempt.classes) {
        if (cls == "tune-parameters") continue;
        const std::string text = cls + " helps " + in.task.op_family + " kernels";
        if (faster) {
          KOPE_RETURN_IF_ERROR(reflector.Evidence(memory::kInsightLesson, scope, {cls}, text,
                                                  EvidenceRelation::kSupportedBy, ratio, out.id));
        } else {
          KOPE_RETURN_IF_ERROR(reflector.Evidence(memory::kInsightLesson, scope, {cls}, text,
                                                  EvidenceRelation::kContradictedBy,
                                                  child_valid ? 1 / ratio : 1.0, out.id));
        }
      }
    }
  }

  memory::InsightScope rule_scope;
  rule_scope.op_family = in.task.op_family;
  rule_scope.backend = in.hardware.backend;
  rule_scope.compiler = in.compiler;
  KOPE_RETURN_IF_ERROR(reflector.FailureRules(rule_scope));

  KOPE_ASSIGN_OR_RETURN(result.credited,
                        writer.CreditUsed(in.attempt.id, result.improved ? options.credit_gain
                                                                         : options.credit_loss));
  return result;
}

}  // namespace kope::agent
