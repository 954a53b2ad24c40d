#include "kope/eval/outcome.h"

#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "kope/backend/kernel_resources_json.h"

namespace kope {
namespace {

using nlohmann::json;

json TimingJson(const TimingSummary& t) {
  return {{"samples", t.samples}, {"median_s", t.median_s},    {"p20_s", t.p20_s},
          {"p80_s", t.p80_s},     {"mean_s", t.mean_s},        {"min_s", t.min_s},
          {"spread", t.spread},   {"measured_s", t.measured_s}};
}

// Finite doubles only: JSON has no NaN or infinity.
json Number(double v) { return std::isfinite(v) ? json(v) : json(fmt::format("{}", v)); }

std::string Seconds(double s) {
  if (s >= 1) return fmt::format("{:.3f} s", s);
  if (s >= 1e-3) return fmt::format("{:.3f} ms", s * 1e3);
  if (s >= 1e-6) return fmt::format("{:.2f} us", s * 1e6);
  return fmt::format("{:.0f} ns", s * 1e9);
}

std::string Position(const std::vector<int64_t>& pos) {
  std::string s = "[";
  for (size_t i = 0; i < pos.size(); ++i) s += (i ? ", " : "") + std::to_string(pos[i]);
  return s + "]";
}

json DiagnosticsJson(const std::vector<Diagnostic>& diagnostics) {
  json diags = json::array();
  for (const Diagnostic& d : diagnostics) {
    diags.push_back({{"file", d.file},
                     {"line", d.line},
                     {"column", d.column},
                     {"severity", d.severity},
                     {"message", d.message}});
  }
  return diags;
}

json MismatchJson(const Mismatch& m) {
  json sizes = json::object();
  for (const auto& [k, v] : m.sizes) sizes[k] = v;
  return {{"reason", m.reason},
          {"size_set", m.size_set},
          {"sizes", sizes},
          {"trial", m.trial},
          {"tensor", m.tensor},
          {"index", m.index},
          {"position", m.position},
          {"expected", Number(m.expected)},
          {"actual", Number(m.actual)},
          {"max_abs_error", Number(m.max_abs_error)},
          {"max_rel_error", Number(m.max_rel_error)},
          {"mismatches", m.mismatches},
          {"elements", m.elements},
          {"rtol", m.rtol},
          {"atol", m.atol}};
}

// The times measured, the speedups and the roofline, each where there is one.
void AddTimes(const Outcome& o, json& j) {
  if (o.candidate_time) j["candidate_time"] = TimingJson(*o.candidate_time);
  if (o.baseline_time) j["baseline_time"] = TimingJson(*o.baseline_time);
  if (o.valid()) j["speedup"] = o.speedup;
  if (o.round_speedups) {
    const RoundSpeedups& r = *o.round_speedups;
    j["round_speedups"] = {{"rounds", r.rounds},
                           {"faster", r.faster},
                           {"slower", r.slower},
                           {"median", r.median},
                           {"spread", r.spread}};
  }
  if (o.valid()) j["timing_noise"] = o.timing_noise;
  if (o.compiled_time) {
    j["compiled_time"] = TimingJson(*o.compiled_time);
    if (o.valid()) j["speedup_over_compiled"] = o.speedup_over_compiled;
  }
  if (!o.compiled_note.empty()) j["compiled_note"] = o.compiled_note;
  if (o.roofline_floor_s) j["roofline_floor_s"] = *o.roofline_floor_s;
  if (o.roofline_fraction) j["roofline_fraction"] = *o.roofline_fraction;
  if (o.baseline_roofline_fraction) j["baseline_roofline_fraction"] = *o.baseline_roofline_fraction;
  if (o.fastest_verified_bench_s) j["fastest_verified_bench_s"] = *o.fastest_verified_bench_s;
}

// Where the evaluation's time went: phases, runners, the bridge, the compiler.
void AddCosts(const Outcome& o, json& j) {
  if (o.bridge_overhead_seconds > 0) {
    j["bridge_overhead_seconds"] = o.bridge_overhead_seconds;
    j["bridge_overhead_by_request"] = o.bridge_overhead_by_request;
  }
  j["phase_seconds"] = o.phase_seconds;
  j["runner_overhead_seconds"] = o.runner_overhead_seconds;
  if (o.runners_reused > 0) j["runners_reused"] = o.runners_reused;
  if (o.runners_from_spares > 0) j["runners_from_spares"] = o.runners_from_spares;
  if (o.compiled_first_call_seconds > 0) {
    j["compiled_first_call_seconds"] = o.compiled_first_call_seconds;
  }
  j["compile_seconds"] = o.compile_seconds;
  j["compile_cache_hit"] = o.compile_cache_hit;
  j["eval_seconds"] = o.eval_seconds;
  j["kernel_seconds"] = o.kernel_seconds;
}

json HardwareJson(const HardwareInfo& hw) {
  json j = {
      {"backend", hw.backend},           {"device", hw.device},
      {"architecture", hw.architecture}, {"cores", hw.cores},
      {"compiler", hw.compiler},         {"bandwidth_bytes_per_s", hw.bandwidth_bytes_per_s},
      {"peak_flops", hw.peak_flops},     {"last_level_cache_bytes", hw.last_level_cache_bytes},
      {"measured_at", hw.measured_at}};
  if (!hw.driver.empty()) j["driver"] = hw.driver;
  if (hw.memory_bytes > 0) j["memory_bytes"] = hw.memory_bytes;
  return j;
}

// The compiler's resources, the sanitizer's report and the profile, where there are.
void AddKernelReports(const Outcome& o, json& j) {
  if (!o.resources.empty()) j["resources"] = json::parse(KernelResourcesToJson(o.resources));
  if (o.sanitizer) {
    j["sanitizer"] = {{"tools", o.sanitizer->tools},
                      {"clean", o.sanitizer->clean},
                      {"first_error", o.sanitizer->first_error},
                      {"note", o.sanitizer->note}};
  }
  if (o.profile) {
    json metrics = json::object();
    for (const auto& [name, value] : o.profile->metrics) metrics[name] = Number(value);
    j["profile"] = {{"tool", o.profile->tool},         {"kernel", o.profile->kernel},
                    {"launches", o.profile->launches}, {"metrics", metrics},
                    {"limiter", o.profile->limiter},   {"note", o.profile->note}};
  }
}

std::string Joined(const std::vector<std::string>& parts) {
  std::string out;
  for (const std::string& p : parts) out += (out.empty() ? "" : ", ") + p;
  return out;
}

std::string FormatMismatch(const Mismatch& m) {
  std::string sizes;
  for (const auto& [k, v] : m.sizes)
    sizes += fmt::format("{}{}={}", sizes.empty() ? "" : " ", k, v);
  std::string s = fmt::format("  at {} ({}), trial {}: {}", m.size_set, sizes, m.trial, m.reason);
  if (m.index >= 0 && m.elements > 0) {
    s += fmt::format(
        ", {}{} expected {:.9g} got {:.9g}; max abs err {:.3g}, max rel err {:.3g}"
        " (rtol {:.3g}, atol {:.3g})",
        m.tensor, Position(m.position), m.expected, m.actual, m.max_abs_error, m.max_rel_error,
        m.rtol, m.atol);
  } else if (!m.tensor.empty()) {
    s += " (" + m.tensor + ")";
  }
  return s + "\n";
}

std::string FormatTiming(const char* label, const TimingSummary& t, const char* note = "") {
  return fmt::format("  {} {} ({}p20 {}, p80 {}, {} samples)\n", label, Seconds(t.median_s), note,
                     Seconds(t.p20_s), Seconds(t.p80_s), t.samples);
}

// The candidate's and the baseline's times and the speedup; "" unless both were timed.
std::string FormatTimes(const Outcome& o) {
  if (!o.candidate_time || !o.baseline_time) return "";
  std::string s = FormatTiming("candidate", *o.candidate_time);
  s += FormatTiming("baseline ", *o.baseline_time);
  if (o.HasFlag(kFlagTimedFasterThanVerified) && o.fastest_verified_bench_s) {
    s += fmt::format("  verified  {} (the candidate's fastest verified call at the bench size)\n",
                     Seconds(*o.fastest_verified_bench_s));
  }
  if (o.compiled_time) s += FormatTiming("compiled ", *o.compiled_time, "torch.compile; ");
  if (!o.SpeedupMeasured()) {
    s += fmt::format(
        "  speedup   none measurable: the machine was too noisy to time ({:.2f}x, noise "
        "{:.0f}%)",
        o.speedup, 100 * o.timing_noise);
  } else {
    s += fmt::format("  speedup   {:.2f}x", o.speedup);
    if (o.HasFlag(kFlagNoisyMachine)) {
      s += fmt::format(" (a noisy machine: noise {:.0f}%)", 100 * o.timing_noise);
    }
  }
  if (o.compiled_time)
    s += fmt::format(" over eager, {:.2f}x over torch.compile", o.speedup_over_compiled);
  if (o.HasFlag(kFlagClockBounded)) {
    s += fmt::format(
        " (bounded by the parent's clock: {:.2f}x as its timer reported, {:.1f}% of its time "
        "unexplained)",
        o.speedup * o.clock_check->speedup_divisor, 100 * (o.clock_check->speedup_divisor - 1));
  }
  if (o.roofline_fraction) {
    s += fmt::format("   roofline: {:.1f}% of the floor {} (baseline {:.1f}%)",
                     100 * *o.roofline_fraction, Seconds(*o.roofline_floor_s),
                     100 * o.baseline_roofline_fraction.value_or(0));
  }
  return s + "\n";
}

// The compiler's resources, the sanitizer's report and the profile, a line each.
std::string FormatKernelReports(const Outcome& o) {
  std::string s;
  for (const KernelResources& r : o.resources) {
    s += fmt::format("  kernel {}: {} registers, {} B shared, {} B stack, spills {}/{} B\n",
                     r.function.substr(0, 60), r.registers, r.shared_bytes, r.stack_bytes,
                     r.spill_store_bytes, r.spill_load_bytes);
  }
  if (o.sanitizer) {
    const std::string tools = Joined(o.sanitizer->tools);
    s += fmt::format("  sanitizer: {}{}{}\n",
                     o.sanitizer->clean ? "clean" : "ERROR: " + o.sanitizer->first_error,
                     tools.empty() ? "" : " (" + tools + ")",
                     o.sanitizer->note.empty() ? "" : "; " + o.sanitizer->note);
  }
  if (o.profile) {
    std::string metrics;
    for (const auto& [name, value] : o.profile->metrics) {
      metrics += fmt::format("{}{}={:.4g}", metrics.empty() ? "" : ", ", name, value);
    }
    s += fmt::format("  profile ({}): {}{}{}\n", o.profile->tool,
                     metrics.empty() ? "no metrics" : metrics,
                     o.profile->limiter.empty() ? "" : "; limited by " + o.profile->limiter,
                     o.profile->note.empty() ? "" : "; " + o.profile->note.substr(0, 300));
  }
  return s;
}

}  // namespace

std::string_view VerdictName(Verdict verdict) {
  switch (verdict) {
    case Verdict::kCompileError:
      return "compile_error";
    case Verdict::kRuntimeError:
      return "runtime_error";
    case Verdict::kCrash:
      return "crash";
    case Verdict::kTimeout:
      return "timeout";
    case Verdict::kIncorrect:
      return "incorrect";
    case Verdict::kValid:
      return "valid";
  }
  return "unknown";
}

bool Outcome::HasFlag(std::string_view flag) const {
  return std::find(flags.begin(), flags.end(), flag) != flags.end();
}

bool Outcome::SpeedupMeasured() const {
  return !(HasFlag(kFlagNoisyMachine) && HasFlag(kFlagWithinNoise));
}

std::string OutcomeToJson(const Outcome& o, int indent) {
  json j;
  j["verdict"] = VerdictName(o.verdict);
  j["message"] = o.message;
  j["task"] = o.task;
  j["candidate"] = {{"name", o.candidate_name}, {"hash", o.candidate_hash}};
  j["diagnostics"] = DiagnosticsJson(o.diagnostics);
  if (o.mismatch) j["mismatch"] = MismatchJson(*o.mismatch);
  if (!o.runtime_detail.empty()) j["runtime_detail"] = o.runtime_detail;
  AddTimes(o, j);
  AddCosts(o, j);
  j["flags"] = o.flags;
  j["trials"] = o.trials;
  j["size_sets"] = o.size_sets;
  j["protection"] = o.protection;
  j["hardware"] = HardwareJson(o.hardware);
  AddKernelReports(o, j);
  j["timing_policy"] = o.timing_policy;
  if (!o.timing_note.empty()) j["timing_note"] = o.timing_note;
  if (!o.captured_inputs_checked.empty()) j["captured_inputs_checked"] = o.captured_inputs_checked;
  if (o.clock_check) {
    json shares = json::array();
    for (double share : o.clock_check->unexplained_share) shares.push_back(Number(share));
    j["clock_check"] = {{"unexplained_share", shares},
                        {"timed_calls", o.clock_check->timed_calls},
                        {"side_stream_calls", o.clock_check->side_stream_calls},
                        {"speedup_divisor", Number(o.clock_check->speedup_divisor)}};
  }
  return j.dump(indent);
}

std::string FormatOutcome(const Outcome& o) {
  std::string s = fmt::format("{}  {}: {}\n", VerdictName(o.verdict), o.task, o.candidate_name);
  if (o.verdict != Verdict::kValid) s += "  " + o.message + "\n";
  for (const Diagnostic& d : o.diagnostics) {
    if (d.severity != "error") continue;
    s += fmt::format("  {}:{}:{}: {}\n", d.file, d.line, d.column, d.message);
  }
  if (o.mismatch) s += FormatMismatch(*o.mismatch);
  if (!o.runtime_detail.empty()) s += "  detail: " + o.runtime_detail.substr(0, 600) + "\n";
  s += FormatTimes(o);
  s += FormatKernelReports(o);
  if (!o.flags.empty()) s += "  flags: " + Joined(o.flags) + "\n";
  if (!o.timing_note.empty()) s += "  timing: " + o.timing_note + "\n";
  if (!o.captured_inputs_checked.empty()) {
    s += "  captured inputs: verified on " + Joined(o.captured_inputs_checked) + "\n";
  }

  s += fmt::format("  {} trials over {} size sets; compile {} ({}); evaluation {}; sandbox: {}\n",
                   o.trials, o.size_sets.size(),
                   o.compile_cache_hit ? "cached" : Seconds(o.compile_seconds), o.hardware.compiler,
                   Seconds(o.eval_seconds), o.protection);
  return s;
}

}  // namespace kope
