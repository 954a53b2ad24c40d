// Checked in the reference runner (see check_site.h): the reference draws the inputs, poisons
// and compares in memory it shares with the candidate. Its answers to the checking requests
// (python/kope_bridge/checker.py) are JSON, with floating values as C99 hexadecimal strings so
// that NaN and infinities survive.
#include <unistd.h>

#include <cstdlib>
#include <nlohmann/json.hpp>

#include "check_site.h"
#include "kope/eval/inputs.h"
#include "session.h"

namespace kope {
namespace {

double HexDouble(const nlohmann::json& v) {
  const std::string s = v.get<std::string>();
  return std::strtod(s.c_str(), nullptr);
}

Status Malformed(const std::string& what, const std::string& json) {
  return Status::Internal("the reference runner's " + what +
                          " is malformed: " + json.substr(0, 300));
}

class ReferenceCheck final : public CheckSite {
 public:
  using CheckSite::CheckSite;

  bool in_reference() const override { return true; }
  Result<CallOutcome> Map(const ArenaLayout& layout) override {
    KOPE_ASSIGN_OR_RETURN(CallOutcome mapped,
                          s_.reference->Prepare(layout, s_.options.call_timeout_seconds,
                                                /*copies=*/false));
    if (!mapped.ok()) return Status::Internal("the reference runner failed: " + mapped.detail);
    return s_.PrepareShared(layout);
  }
  // The reference runner draws the inputs itself from a secret seed: they never cross between
  // host and GPU.
  Status DrawInputs(const ArenaLayout&, const SizeSet& set, int trial, std::mt19937_64& rng,
                    bool perturb) override {
    const auto mode = perturb ? Runner::DrawMode::kPerturb : Runner::DrawMode::kTrial;
    KOPE_ASSIGN_OR_RETURN(std::vector<Runner::DrawSpec> specs, DrawSpecs(s_.task, trial, set));
    KOPE_ASSIGN_OR_RETURN(CallOutcome drawn,
                          s_.reference->Draw(0, rng(), mode, specs, s_.CheckerTimeout()));
    if (!drawn.ok()) {
      return Status::Internal("the reference runner could not draw inputs: " + drawn.detail);
    }
    return Status::Ok();
  }
  // Written into the reference's arena by the parent (the inputs not captured drawn there),
  // then taken by the reference runner as a trial's inputs.
  Status GiveInputs(const ArenaLayout& layout, const CapturedTrial& given, const SizeSet& set,
                    int trial, std::mt19937_64& rng) override {
    KOPE_RETURN_IF_ERROR(WriteGivenInputs(s_.task, layout, given, set, trial, rng, *s_.reference));
    KOPE_ASSIGN_OR_RETURN(std::vector<Runner::DrawSpec> specs, DrawSpecs(s_.task, trial, set));
    KOPE_ASSIGN_OR_RETURN(CallOutcome taken, s_.reference->Draw(0, rng(), Runner::DrawMode::kGiven,
                                                                specs, s_.CheckerTimeout()));
    if (!taken.ok()) {
      return Status::Internal("the reference runner could not take the given inputs: " +
                              taken.detail);
    }
    return Status::Ok();
  }
  Result<CallOutcome> CallReference(const ArenaLayout&, double timeout, bool summarize) override {
    return s_.reference->ReferenceCall(summarize, timeout);
  }
  Result<EvalSession::Expected> ReferenceResult(const ArenaLayout& layout, const CallOutcome& call,
                                                bool summarize) override {
    if (summarize) {
      KOPE_ASSIGN_OR_RETURN(s_.reference_summary, ParseReferenceSummary(call.detail, layout));
    }
    return EvalSession::Expected{};
  }
  Status PoisonOutputs(const ArenaLayout& layout, Poison poison) override;
  Result<EvalSession::CallFindings> Find(const ArenaLayout& layout, const EvalSession::Expected&,
                                         const std::vector<Tolerance>& tolerances) override {
    std::vector<std::pair<double, double>> tols;
    for (const Tolerance& t : tolerances) tols.emplace_back(t.rtol, t.atol);
    KOPE_ASSIGN_OR_RETURN(CallOutcome checked, s_.reference->Check(tols, s_.CheckerTimeout()));
    if (!checked.ok()) return Status::Internal("the reference runner failed: " + checked.detail);
    return ParseCallFindings(checked.detail, layout);
  }
  // A bridge candidate's outputs are copied whole: see EvalSession::CallsTwicePerTrial.
  bool CallsTwicePerTrial(const SizeSet& set) const override {
    return set.label != BenchSizes(s_.task, s_.language).label;
  }
};

// Once per shared arena (EvalSession::shared_outputs_poisoned).
Status ReferenceCheck::PoisonOutputs(const ArenaLayout& layout, Poison poison) {
  if (s_.shared_outputs_poisoned) return Status::Ok();
  std::vector<Runner::PoisonSpan> spans;
  for (size_t o = 0; o < layout.outputs.size(); ++o) {
    spans.push_back({{layout.output_offsets[o], layout.outputs[o].bytes},
                     PoisonElement(layout.outputs[o].dtype, poison)});
  }
  KOPE_ASSIGN_OR_RETURN(
      CallOutcome poisoned,
      s_.reference->Poison(spans, GuardBytes(ArenaLayout::kGuardBytes), s_.CheckerTimeout()));
  if (!poisoned.ok()) return Status::Internal("the reference runner failed: " + poisoned.detail);
  s_.shared_outputs_poisoned = true;
  return Status::Ok();
}

}  // namespace

Result<std::vector<EvalSession::OutputSummary>> ParseReferenceSummary(const std::string& json,
                                                                      const ArenaLayout& layout) {
  nlohmann::json j = nlohmann::json::parse(json, nullptr, false);
  try {
    if (j.is_discarded() || j.at("outputs").size() != layout.outputs.size()) {
      return Malformed("summary", json);
    }
    std::vector<EvalSession::OutputSummary> out;
    for (const auto& o : j.at("outputs")) {
      out.push_back({o.at("constant").get<bool>(),
                     std::strtoull(o.at("fingerprint").get<std::string>().c_str(), nullptr, 10)});
    }
    return out;
  } catch (const nlohmann::json::exception&) {
    return Malformed("summary", json);
  }
}

Result<EvalSession::CallFindings> ParseCallFindings(const std::string& json,
                                                    const ArenaLayout& layout) {
  nlohmann::json j = nlohmann::json::parse(json, nullptr, false);
  if (j.is_discarded()) return Malformed("check", json);
  try {
    EvalSession::CallFindings f;
    f.input_modified = j.at("input").get<int>();
    if (f.input_modified >= static_cast<int>(layout.inputs.size())) {
      return Malformed("check", json);
    }
    if (!j.at("guard").is_null()) {
      f.guard_output = j["guard"].at(0).get<int>();
      f.guard_byte = j["guard"].at(1).get<int64_t>();
      if (f.guard_output < 0 || f.guard_output >= static_cast<int>(layout.outputs.size())) {
        return Malformed("check", json);
      }
    }
    for (const auto& o : j.at("outputs")) {
      if (f.outputs.size() == layout.outputs.size()) return Malformed("check", json);
      Comparison c;
      c.mismatches = o.at("mismatches").get<int64_t>();
      c.ok = c.mismatches == 0;
      c.first_index = o.at("first").get<int64_t>();
      c.expected = HexDouble(o.at("expected"));
      c.actual = HexDouble(o.at("actual"));
      c.max_abs_error = HexDouble(o.at("max_abs"));
      c.max_rel_error = HexDouble(o.at("max_rel"));
      c.nan_inf_mismatch = o.at("nan_inf").get<bool>();
      f.outputs.push_back(c);
    }
    // A check that found nothing covers every output.
    if (f.input_modified < 0 && f.guard_output < 0 && f.outputs.size() != layout.outputs.size() &&
        (f.outputs.empty() || f.outputs.back().ok)) {
      return Malformed("check", json);
    }
    return f;
  } catch (const nlohmann::json::exception&) {
    return Malformed("check", json);
  }
}

std::unique_ptr<CheckSite> CheckInReference(EvalSession& session) {
  return std::make_unique<ReferenceCheck>(session);
}

Result<CallOutcome> EvalSession::PrepareShared(const ArenaLayout& layout) {
  const double timeout = options.call_timeout_seconds;
  shared_outputs_poisoned = false;
  int fd = -1;
  KOPE_ASSIGN_OR_RETURN(CallOutcome shared,
                        reference->ShareArena(*candidate, &fd, CheckerTimeout()));
  if (!shared.ok()) {
    return Status::Internal("the reference runner could not share memory: " + shared.detail);
  }
  Result<CallOutcome> mapped = candidate->PrepareShared(layout, fd, timeout);
  close(fd);
  return mapped;
}

}  // namespace kope
