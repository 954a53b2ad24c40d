#include "kope/deploy/profile.h"

#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "kope/base/file.h"

namespace kope::deploy {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

// Reads the fields of one JSON object; the first problem is kept, with the field's path.
class Fields {
 public:
  Fields(const json& object, std::string path, Status* error)
      : object_(object), path_(std::move(path)), error_(error) {}

  double Number(const char* key) {
    const json* v = Find(key, "a number");
    return v != nullptr && Expect(v->is_number(), key, "a number") ? v->get<double>() : 0;
  }
  int64_t Integer(const char* key) {
    const json* v = Find(key, "an integer");
    return v != nullptr && Expect(v->is_number_integer(), key, "an integer") ? v->get<int64_t>()
                                                                             : 0;
  }
  std::string String(const char* key) {
    const json* v = Find(key, "a string");
    return v != nullptr && Expect(v->is_string(), key, "a string") ? v->get<std::string>() : "";
  }
  std::optional<std::string> OptionalString(const char* key) {
    const json* v = Find(key, "a string or null");
    if (v == nullptr || v->is_null()) return std::nullopt;
    if (!Expect(v->is_string(), key, "a string or null")) return std::nullopt;
    return v->get<std::string>();
  }
  std::vector<std::string> Strings(const char* key) {
    const json* v = Find(key, "an array of strings");
    std::vector<std::string> out;
    if (v == nullptr || !Expect(v->is_array(), key, "an array of strings")) return out;
    for (const json& item : *v) {
      if (!Expect(item.is_string(), key, "an array of strings")) return {};
      out.push_back(item.get<std::string>());
    }
    return out;
  }
  // The array or object at `key` (nullptr, with the error kept, when it is not one).
  const json* Array(const char* key) {
    const json* v = Find(key, "an array");
    return v != nullptr && Expect(v->is_array(), key, "an array") ? v : nullptr;
  }
  const json* Object(const char* key) {
    const json* v = Find(key, "an object");
    return v != nullptr && Expect(v->is_object(), key, "an object") ? v : nullptr;
  }
  std::string Path(const char* key) const { return path_.empty() ? key : path_ + "." + key; }

 private:
  const json* Find(const char* key, const char* what) {
    auto it = object_.find(key);
    if (it != object_.end()) return &*it;
    Fail(Path(key) + ": missing (expected " + what + ")");
    return nullptr;
  }
  bool Expect(bool ok, const char* key, const char* what) {
    if (!ok) Fail(Path(key) + ": expected " + what);
    return ok;
  }
  void Fail(const std::string& message) {
    if (error_->ok()) *error_ = Status::Corruption(message);
  }

  const json& object_;
  std::string path_;
  Status* error_;
};

PhaseProfile ReadPhase(const json& j, const std::string& path, Status* error) {
  Fields f(j, path, error);
  PhaseProfile p;
  p.entry = f.Integer("entry");
  p.phase = f.String("phase");
  p.weight = f.Number("weight");
  p.wall_ms = f.Number("wall_ms");
  p.gpu_busy_ms = f.Number("gpu_busy_ms");
  p.idle_fraction = f.Number("idle_fraction");
  p.steps = f.Integer("steps");
  if (error->ok() && p.phase != "prefill" && p.phase != "decode") {
    *error = Status::Corruption(path + ".phase: \"" + p.phase + "\" is neither prefill nor decode");
  }
  return p;
}

Opportunity ReadOpportunity(const json& j, const std::string& path, Status* error) {
  Fields f(j, path, error);
  Opportunity o;
  o.rank = f.Integer("rank");
  o.name = f.String("name");
  o.grain = f.String("grain");
  o.module_type = f.String("module_type");
  o.phases = f.Strings("phases");
  o.share = f.Number("share");
  o.headroom = f.Number("headroom");
  o.score = f.Number("score");
  o.amdahl_ceiling = f.Number("amdahl_ceiling");
  o.floor_ms = f.Number("floor_ms");
  o.task = f.OptionalString("task");
  return o;
}

Status ReadTop(const json& root, Profile* p) {
  Status error;
  Fields f(root, "", &error);
  p->schema = f.Integer("schema");
  if (error.ok() && p->schema != 1) {
    return Status::Corruption("schema: version " + std::to_string(p->schema) +
                              " is not one this kope reads (1)");
  }
  if (auto it = root.find("workload"); it != root.end() && it->is_object()) {
    p->workload_name = it->value("name", "");
  }
  if (auto it = root.find("environment"); it != root.end() && it->is_object()) {
    p->device = it->value("device", "");
  }
  if (const json* phases = f.Array("phases")) {
    for (size_t i = 0; i < phases->size(); ++i) {
      p->phases.push_back(ReadPhase((*phases)[i], "phases[" + std::to_string(i) + "]", &error));
    }
  }
  if (const json* w = f.Object("weighted")) {
    Fields wf(*w, "weighted", &error);
    p->weighted = {wf.Number("prefill_share"), wf.Number("decode_share"),
                   wf.Number("gpu_idle_fraction")};
  }
  if (const json* ops = f.Array("opportunities")) {
    for (size_t i = 0; i < ops->size(); ++i) {
      const std::string path = "opportunities[" + std::to_string(i) + "]";
      p->opportunities.push_back(ReadOpportunity((*ops)[i], path, &error));
    }
  }
  return error;
}

std::string Percent(double fraction) { return fmt::format("{:.0f}%", 100 * fraction); }

std::string Joined(const std::vector<std::string>& parts, const char* separator) {
  std::string out;
  for (const std::string& p : parts) out += (out.empty() ? "" : separator) + p;
  return out;
}

void AppendPhases(const Profile& p, std::string* out) {
  *out += fmt::format("  {:<5}  {:<7}  {:>6}  {:>8}{:5}  {:>8}{:5}  {:>5}  {:>5}\n", "entry",
                      "phase", "weight", "wall ms", "", "GPU busy", "", "idle", "steps");
  for (const PhaseProfile& ph : p.phases) {
    const char* unit = ph.phase == "decode" ? "/step" : "";
    *out += fmt::format("  {:<5}  {:<7}  {:>6.2f}  {:>8.2f}{:<5}  {:>8.2f}{:<5}  {:>5}  {:>5}\n",
                        ph.entry, ph.phase, ph.weight, ph.wall_ms, unit, ph.gpu_busy_ms, unit,
                        Percent(ph.idle_fraction), ph.steps);
  }
  *out += fmt::format("weighted: prefill {} of the time, decode {}; the GPU idle {} of it\n",
                      Percent(p.weighted.prefill_share), Percent(p.weighted.decode_share),
                      Percent(p.weighted.gpu_idle_fraction));
}

void AppendOpportunities(const Profile& p, const SummaryOptions& options, std::string* out) {
  const size_t shown = std::min(options.top, p.opportunities.size());
  if (shown == 0) {
    *out += "no optimization opportunities found\n";
    return;
  }
  *out += fmt::format(
      "top {} of {} opportunities (ceiling: the workload's speedup if it took no "
      "time):\n",
      shown, p.opportunities.size());
  size_t name_width = 4;
  for (size_t i = 0; i < shown; ++i) {
    name_width = std::max(name_width, p.opportunities[i].name.size());
  }
  *out +=
      fmt::format("  {:>3}  {:<{}}  {:<8}  {:<14}  {:>6}  {:>8}  {:>7}  {:>8}  {}\n", "#", "name",
                  name_width, "grain", "phases", "share", "headroom", "score", "ceiling", "task");
  for (size_t i = 0; i < shown; ++i) {
    const Opportunity& o = p.opportunities[i];
    const std::string task = o.task ? (options.out_dir / *o.task).string() : "-";
    *out += fmt::format(
        "  {:>3}  {:<{}}  {:<8}  {:<14}  {:>5.1f}%  {:>8.2f}  {:>7.3f}  {:>7.2f}x  {}\n", o.rank,
        o.name, name_width, o.grain, Joined(o.phases, "+"), 100 * o.share, o.headroom, o.score,
        o.amdahl_ceiling, task);
  }
}

}  // namespace

Result<Profile> ParseProfile(std::string_view text, std::string_view file) {
  json root = json::parse(text, nullptr, false);
  if (root.is_discarded() || !root.is_object()) {
    return Status::Corruption(std::string(file) + ": not a JSON object");
  }
  Profile p;
  Status status = ReadTop(root, &p);
  if (!status.ok()) return Status::Corruption(std::string(file) + ": " + status.message());
  return p;
}

Result<Profile> ReadProfile(const fs::path& path) {
  KOPE_ASSIGN_OR_RETURN(std::string text, ReadFileText(path));
  return ParseProfile(text, path.string());
}

std::string ProfileSummary(const Profile& p, const SummaryOptions& options) {
  std::string out = "profile";
  if (!p.workload_name.empty()) out += " of " + p.workload_name;
  if (!p.device.empty()) out += " on " + p.device;
  out += fmt::format(": {} phases\n", p.phases.size());
  AppendPhases(p, &out);
  AppendOpportunities(p, options, &out);
  size_t tasks = 0;
  for (const Opportunity& o : p.opportunities) tasks += o.task.has_value();
  if (tasks > 0) {
    const fs::path dir = options.out_dir / "tasks";
    out += fmt::format("{} task folder{} in {}: kope eval {} CANDIDATE, kope optimize {}\n", tasks,
                       tasks == 1 ? "" : "s", dir.string(), (dir / "<name>").string(),
                       (dir / "<name>").string());
  }
  return out;
}

}  // namespace kope::deploy
