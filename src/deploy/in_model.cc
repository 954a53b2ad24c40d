#include "kope/deploy/in_model.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>
#include <type_traits>

#include "kope/base/file.h"

namespace kope::deploy {
namespace {

using json = nlohmann::json;

// Per request entry: the figure's key in validation.json and its row's name ("request": the
// whole request, prefill and decode).
constexpr std::pair<const char*, const char*> kPhases[] = {
    {"prefill_ms", "prefill"}, {"decode_tokens_per_s", "decode"}, {"request_ms", "request"}};

// A field of an object, or `fallback` where it is absent, null or of another type (reports are
// read back from the store by `kope serve`, which must show what it can of any of them).
template <typename T>
T Field(const json& object, const char* key, T fallback) {
  if (!object.is_object()) return fallback;
  auto it = object.find(key);
  if (it == object.end()) return fallback;
  if constexpr (std::is_same_v<T, bool>) {
    return it->is_boolean() ? it->template get<bool>() : fallback;
  } else if constexpr (std::is_integral_v<T>) {
    return it->is_number_integer() ? it->template get<T>() : fallback;
  } else {
    return it->is_number() ? it->template get<T>() : fallback;
  }
}

double Median(const json& figure, const char* side) {
  return figure.is_object() && figure.contains(side) ? Field(figure[side], "median", 0.0) : 0.0;
}

std::vector<EntryFigure> ReadEntries(const json& measured) {
  std::vector<EntryFigure> out;
  if (!measured.is_array()) return out;
  for (const json& m : measured) {
    for (const auto& [key, phase] : kPhases) {
      if (!m.is_object() || !m.contains(key)) continue;
      const json& f = m[key];
      out.push_back({Field(m, "entry", int64_t{0}), Field(m, "batch", int64_t{0}), phase,
                     Median(f, "unpatched"), Median(f, "patched"), Field(f, "speedup", 0.0),
                     Field(f, "noise", 0.0), Field(f, "win", false), Field(f, "loss", false)});
    }
  }
  return out;
}

InModelTrial ReadTrial(const std::string& task, const json& r) {
  InModelTrial t;
  t.task = task;
  t.attempt = r["attempt"].is_number_integer() ? r["attempt"].get<memory::NodeId>() : 0;
  t.kind = r.value("kind", std::string());
  t.accepted = r.value("accepted", false);
  t.reason = r.value("reason", std::string());
  t.installed = r.contains("gate");
  t.passed_gate = t.installed && r["gate"].value("passed", false);
  json evidence = json::object();
  for (const char* key : {"gate", "e2e", "unit_speedup", "kind"}) {
    if (r.contains(key)) evidence[key] = r[key];
  }
  evidence["accepted"] = t.accepted;
  t.evidence_json = evidence.dump();
  t.e2e = ReadEntries(r.value("e2e", json()));
  return t;
}

std::string_view VerdictOf(const InModelTrial& t) {
  if (!t.installed) return memory::kVerdictRuntimeError;
  return t.passed_gate ? memory::kVerdictValid : memory::kVerdictIncorrect;
}

}  // namespace

Result<Validation> ParseValidation(std::string_view text, std::string_view file) {
  json j = json::parse(text, nullptr, false);
  auto bad = [&](const std::string& why) {
    return Status::InvalidArgument(std::string(file) + ": " + why);
  };
  if (j.is_discarded() || !j.is_object()) return bad("not a JSON object");
  if (j.value("format", std::string()) != "kope-validation-1") {
    return bad("format is not kope-validation-1");
  }
  try {
    Validation v;
    v.workload = j.value("workload", std::string());
    for (const json& task : j.at("tasks")) {
      for (const json& r : task.at("tried")) v.trials.push_back(ReadTrial(task.at("task"), r));
    }
    v.patches = j.at("patches").get<std::vector<std::string>>();
    for (const json& d : j.at("dropped")) {
      v.dropped.push_back(d.value("task", std::string()) + ": " + d.value("reason", ""));
    }
    v.e2e = ReadEntries(j.value("e2e", json()));
    if (j["artifact"].is_string()) v.artifact = j["artifact"];
    v.report_json = j.dump();
    return v;
  } catch (const json::exception& e) {
    return bad(e.what());
  }
}

Result<Validation> ReadValidation(const std::filesystem::path& path) {
  KOPE_ASSIGN_OR_RETURN(std::string text, ReadFileText(path));
  return ParseValidation(text, path.string());
}

Result<int> RecordInModel(memory::GraphStore& store, const Validation& validation,
                          memory::NodeId workload_id) {
  int written = 0;
  KOPE_RETURN_IF_ERROR(store.Write([&](memory::GraphWriter& w) -> Status {
    for (const InModelTrial& t : validation.trials) {
      if (t.attempt == 0) continue;
      memory::OutcomeNode o;
      o.attempt_id = t.attempt;
      o.stage = "in_model";
      o.verdict = std::string(VerdictOf(t));
      if (!t.accepted) {
        o.error_message = "in the model of workload " + validation.workload + ": " + t.reason;
      }
      o.evidence_json = t.evidence_json;
      Result<memory::NodeId> id = w.PutOutcome(o);
      if (!id.ok()) return id.status().WithContext("attempt a" + std::to_string(t.attempt));
      ++written;
    }
    if (workload_id == 0) return Status::Ok();
    memory::DeploymentRecord d;
    d.workload_id = workload_id;
    d.report_json = validation.report_json;
    return w.AddDeployment(d).status();
  }));
  return written;
}

std::string ValidationSummary(const Validation& v) {
  std::string out = fmt::format("in the model of {}:\n", v.workload);
  for (const InModelTrial& t : v.trials) {
    // A runtime patch is no recorded attempt.
    const std::string attempt = t.attempt == 0 ? "-" : "a" + std::to_string(t.attempt);
    out += fmt::format("  {:<32} {:<7} {:<8} {}\n", t.task, attempt, t.kind.empty() ? "-" : t.kind,
                       (t.accepted ? "accepted" : "rejected") +
                           std::string(t.accepted ? "" : ": ") + (t.accepted ? "" : t.reason));
  }
  for (const std::string& d : v.dropped) out += "  dropped when combined: " + d + "\n";
  if (v.patches.empty()) return out + "no patch accepted\n";
  out += fmt::format("end to end with {} patch{} together:\n", v.patches.size(),
                     v.patches.size() == 1 ? "" : "es");
  out += fmt::format("  {:<6} {:<6} {:<8} {:>12} {:>12} {:>9} {:>7}\n", "entry", "batch", "phase",
                     "unpatched", "patched", "speedup", "noise");
  for (const EntryFigure& e : v.e2e) {
    const char* unit = e.phase == "decode" ? "tok/s" : "ms";
    out += fmt::format("  {:<6} {:<6} {:<8} {:>9.4g} {:<2} {:>9.4g} {:<2} {:>8.3f}x {:>6.1f}%{}\n",
                       e.entry, e.batch, e.phase, e.unpatched, unit, e.patched, unit, e.speedup,
                       100 * e.noise,
                       e.win    ? "  win"
                       : e.loss ? "  loss"
                                : "");
  }
  return out + "artifact: " + v.artifact + "\n";
}

}  // namespace kope::deploy
