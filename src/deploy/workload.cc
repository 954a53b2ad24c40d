#include "kope/deploy/workload.h"

#include <toml++/toml.h>

#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <nlohmann/json.hpp>
#include <sstream>

#include "kope/base/file.h"

namespace kope::deploy {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::ordered_json;

// Errors are "<field>: <what>" here; ParseWorkload puts the file's name in front.
Status FieldError(const std::string& field, const std::string& what) {
  return Status::InvalidArgument(field + ": " + what);
}

std::string Field(const std::string& parent, std::string_view key) {
  return parent.empty() ? std::string(key) : parent + "." + std::string(key);
}

// What a value is, for "(got ...)": numbers and strings as written, other kinds by name.
std::string Describe(const toml::node& node) {
  if (auto v = node.value_exact<int64_t>()) return std::to_string(*v);
  if (auto v = node.value_exact<double>()) {
    std::ostringstream out;
    out << *v;
    return out.str();
  }
  if (auto v = node.value_exact<std::string>()) return "\"" + *v + "\"";
  if (node.is_boolean()) return node.as_boolean()->get() ? "true" : "false";
  if (node.is_table()) return "a table";
  if (node.is_array()) return "an array";
  return "a date or time";
}

Status CheckKeys(const toml::table& table, const std::string& path,
                 std::initializer_list<std::string_view> allowed) {
  for (auto&& [key, node] : table) {
    if (std::find(allowed.begin(), allowed.end(), key.str()) != allowed.end()) continue;
    std::string expected;
    for (std::string_view a : allowed) expected += (expected.empty() ? "" : ", ") + std::string(a);
    return FieldError(Field(path, key.str()), "unknown key (expected one of: " + expected + ")");
  }
  return Status::Ok();
}

Result<std::string> String(const toml::node& node, const std::string& path) {
  auto v = node.value_exact<std::string>();
  if (!v || v->empty())
    return FieldError(path, "must be a non-empty string (got " + Describe(node) + ")");
  return *v;
}

Result<int64_t> Integer(const toml::node& node, const std::string& path, int64_t min) {
  auto v = node.value_exact<int64_t>();
  if (!v || *v < min) {
    return FieldError(path, std::string(min > 0 ? "must be a positive integer"
                                                : "must be a non-negative integer") +
                                " (got " + Describe(node) + ")");
  }
  return *v;
}

// An optional integer field (`fallback` when absent).
Result<int64_t> IntegerField(const toml::table& table, const std::string& parent,
                             std::string_view key, int64_t fallback, int64_t min = 1) {
  const toml::node* node = table.get(key);
  if (node == nullptr) return fallback;
  return Integer(*node, Field(parent, key), min);
}

// A finite number (integer or float) in (0, max].
Result<double> PositiveNumber(const toml::node& node, const std::string& path, double max) {
  std::optional<double> v = node.value_exact<double>();
  if (!v) {
    if (auto i = node.value_exact<int64_t>()) v = static_cast<double>(*i);
  }
  if (!v || !std::isfinite(*v) || *v <= 0 || *v > max) {
    std::string range = max < HUGE_VAL ? "a number in (0, 1]" : "a positive number";
    return FieldError(path, "must be " + range + " (got " + Describe(node) + ")");
  }
  return *v;
}

Result<std::string> EnumField(const toml::table& table, const std::string& parent,
                              std::string_view key, std::initializer_list<std::string_view> values,
                              std::string fallback) {
  const toml::node* node = table.get(key);
  if (node == nullptr) return fallback;
  const std::string path = Field(parent, key);
  std::string listed;
  for (std::string_view v : values) listed += (listed.empty() ? "" : ", ") + std::string(v);
  auto v = node->value_exact<std::string>();
  if (!v)
    return FieldError(path,
                      "must be a string, one of " + listed + " (got " + Describe(*node) + ")");
  if (std::find(values.begin(), values.end(), *v) == values.end()) {
    return FieldError(path, "unknown value \"" + *v + "\" (" + listed + ")");
  }
  return *v;
}

Result<const toml::table*> Table(const toml::node& node, const std::string& path) {
  if (!node.is_table()) return FieldError(path, "must be a table (got " + Describe(node) + ")");
  return node.as_table();
}

// A table field; an empty table when absent.
Result<const toml::table*> OptionalTable(const toml::table& root, std::string_view key) {
  static const toml::table kEmpty;
  const toml::node* node = root.get(key);
  if (node == nullptr) return &kEmpty;
  return Table(*node, std::string(key));
}

Result<json> ToJson(const toml::node& node, const std::string& path) {
  if (auto v = node.value_exact<int64_t>()) return json(*v);
  if (auto v = node.value_exact<double>()) {
    if (!std::isfinite(*v)) return FieldError(path, "must be a finite number");
    return json(*v);
  }
  if (auto v = node.value_exact<std::string>()) return json(*v);
  if (auto v = node.value_exact<bool>()) return json(*v);
  if (const toml::array* array = node.as_array()) {
    json out = json::array();
    for (size_t i = 0; i < array->size(); ++i) {
      KOPE_ASSIGN_OR_RETURN(json item,
                            ToJson(*array->get(i), path + "[" + std::to_string(i) + "]"));
      out.push_back(std::move(item));
    }
    return out;
  }
  if (const toml::table* table = node.as_table()) {
    json out = json::object();
    for (auto&& [key, value] : *table) {
      KOPE_ASSIGN_OR_RETURN(out[std::string(key.str())], ToJson(value, Field(path, key.str())));
    }
    return out;
  }
  return FieldError(path, "dates and times are not allowed");
}

// `written` against the workload file's folder, made absolute; `folder`: it must be a folder.
Result<fs::path> ExistingPath(const toml::node& node, const std::string& path, const fs::path& dir,
                              bool folder) {
  KOPE_ASSIGN_OR_RETURN(std::string written, String(node, path));
  std::error_code ec;
  fs::path resolved = fs::weakly_canonical(dir / written, ec);
  if (ec) resolved = (dir / written).lexically_normal();
  if (!fs::exists(resolved, ec)) return FieldError(path, "'" + written + "' does not exist");
  if (folder && !fs::is_directory(resolved, ec)) {
    return FieldError(path, "'" + written + "' is not a folder");
  }
  if (!folder && !fs::is_regular_file(resolved, ec)) {
    return FieldError(path, "'" + written + "' is not a regular file");
  }
  return resolved;
}

Result<WorkloadModel> ReadModel(const toml::table& root, const fs::path& dir) {
  const toml::node* node = root.get("model");
  if (node == nullptr) return FieldError("model", "missing (a [model] table is required)");
  KOPE_ASSIGN_OR_RETURN(const toml::table* t, Table(*node, "model"));
  KOPE_RETURN_IF_ERROR(
      CheckKeys(*t, "model", {"architecture", "seed", "config", "checkpoint", "script"}));
  const int sources =
      t->contains("architecture") + t->contains("checkpoint") + t->contains("script");
  if (sources != 1)
    return FieldError("model", "give exactly one of architecture, checkpoint, script");
  WorkloadModel m;
  if (t->contains("architecture")) {
    m.source = ModelSource::kConfig;
    KOPE_ASSIGN_OR_RETURN(m.architecture, String(*t->get("architecture"), "model.architecture"));
    const toml::node* config = t->get("config");
    if (config != nullptr) {
      KOPE_RETURN_IF_ERROR(Table(*config, "model.config").status());
      KOPE_ASSIGN_OR_RETURN(json fields, ToJson(*config, "model.config"));
      m.config_json = fields.dump();
    }
  } else if (t->contains("config")) {
    return FieldError("model.config",
                      "only with model.architecture (a checkpoint or script has its own)");
  }
  if (t->contains("checkpoint")) {
    m.source = ModelSource::kCheckpoint;
    KOPE_ASSIGN_OR_RETURN(m.path,
                          ExistingPath(*t->get("checkpoint"), "model.checkpoint", dir, true));
    std::error_code ec;
    if (!fs::is_regular_file(m.path / "config.json", ec)) {
      return FieldError("model.checkpoint", "'" + m.path.string() +
                                                "' has no config.json (expected a Hugging Face "
                                                "checkpoint folder)");
    }
    if (t->contains("seed"))
      return FieldError("model.seed", "not with model.checkpoint (its weights are given)");
  }
  if (t->contains("script")) {
    m.source = ModelSource::kScript;
    KOPE_ASSIGN_OR_RETURN(m.path, ExistingPath(*t->get("script"), "model.script", dir, false));
  }
  KOPE_ASSIGN_OR_RETURN(m.seed, IntegerField(*t, "model", "seed", 0, 0));
  return m;
}

Result<WorkloadRun> ReadRun(const toml::table& root) {
  KOPE_ASSIGN_OR_RETURN(const toml::table* t, OptionalTable(root, "run"));
  KOPE_RETURN_IF_ERROR(CheckKeys(*t, "run", {"dtype", "device", "attention", "mode"}));
  WorkloadRun r;
  KOPE_ASSIGN_OR_RETURN(r.dtype, EnumField(*t, "run", "dtype", {"bf16", "fp16", "fp32"}, r.dtype));
  KOPE_ASSIGN_OR_RETURN(r.device, EnumField(*t, "run", "device", {"cuda", "cpu"}, r.device));
  KOPE_ASSIGN_OR_RETURN(r.attention,
                        EnumField(*t, "run", "attention", {"eager", "sdpa"}, r.attention));
  KOPE_ASSIGN_OR_RETURN(
      r.mode, EnumField(*t, "run", "mode", {"generate", "static-compile", "cuda-graphs"}, r.mode));
  return r;
}

Result<RequestEntry> ReadRequest(const toml::node& node, const std::string& path) {
  KOPE_ASSIGN_OR_RETURN(const toml::table* t, Table(node, path));
  KOPE_RETURN_IF_ERROR(CheckKeys(*t, path, {"batch", "prompt", "decode", "weight"}));
  RequestEntry r;
  for (auto [key, field] :
       {std::pair{"batch", &r.batch}, {"prompt", &r.prompt}, {"decode", &r.decode}}) {
    const toml::node* value = t->get(key);
    if (value == nullptr) return FieldError(Field(path, key), "missing (a positive integer)");
    KOPE_ASSIGN_OR_RETURN(*field, Integer(*value, Field(path, key), 1));
  }
  if (const toml::node* weight = t->get("weight")) {
    KOPE_ASSIGN_OR_RETURN(r.weight, PositiveNumber(*weight, Field(path, "weight"), HUGE_VAL));
  }
  return r;
}

Result<std::vector<RequestEntry>> ReadRequests(const toml::table& root) {
  const toml::node* node = root.get("requests");
  if (node == nullptr) return FieldError("requests", "missing (at least one [[requests]] entry)");
  const toml::array* array = node->as_array();
  if (array == nullptr) return FieldError("requests", "must be an array of tables ([[requests]])");
  if (array->empty()) return FieldError("requests", "needs at least one entry");
  std::vector<RequestEntry> out;
  double total = 0;
  for (size_t i = 0; i < array->size(); ++i) {
    KOPE_ASSIGN_OR_RETURN(RequestEntry r,
                          ReadRequest(*array->get(i), "requests[" + std::to_string(i) + "]"));
    total += r.weight;
    out.push_back(r);
  }
  for (RequestEntry& r : out) r.weight /= total;
  return out;
}

Result<AccuracyGate> ReadAccuracy(const toml::table& root) {
  KOPE_ASSIGN_OR_RETURN(const toml::table* t, OptionalTable(root, "accuracy"));
  KOPE_RETURN_IF_ERROR(CheckKeys(
      *t, "accuracy", {"prompts", "random_prompts", "min_token_match", "max_logit_diff"}));
  AccuracyGate g;
  if (t->contains("prompts") && t->contains("random_prompts")) {
    return FieldError("accuracy", "give one of prompts, random_prompts");
  }
  if (const toml::node* prompts = t->get("prompts")) {
    const toml::array* array = prompts->as_array();
    if (array == nullptr || array->empty()) {
      return FieldError("accuracy.prompts", "must be a non-empty array of strings");
    }
    for (size_t i = 0; i < array->size(); ++i) {
      KOPE_ASSIGN_OR_RETURN(std::string p,
                            String(*array->get(i), "accuracy.prompts[" + std::to_string(i) + "]"));
      g.prompts.push_back(std::move(p));
    }
    g.random_prompts = 0;
  }
  KOPE_ASSIGN_OR_RETURN(g.random_prompts,
                        IntegerField(*t, "accuracy", "random_prompts", g.random_prompts));
  if (const toml::node* v = t->get("min_token_match")) {
    KOPE_ASSIGN_OR_RETURN(g.min_token_match, PositiveNumber(*v, "accuracy.min_token_match", 1.0));
  }
  if (const toml::node* v = t->get("max_logit_diff")) {
    KOPE_ASSIGN_OR_RETURN(g.max_logit_diff,
                          PositiveNumber(*v, "accuracy.max_logit_diff", HUGE_VAL));
  }
  return g;
}

Result<std::string> ReadName(const toml::table& root, const fs::path& file) {
  const toml::node* node = root.get("name");
  std::string name = node != nullptr ? "" : file.stem().string();
  if (node != nullptr) {
    KOPE_ASSIGN_OR_RETURN(name, String(*node, "name"));
  }
  const bool plain = std::all_of(name.begin(), name.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.';
  });
  if (name.empty() || !plain) {
    return FieldError("name", "\"" + name + "\" must be letters, digits, '-', '_' or '.'" +
                                  (node == nullptr ? " (set name: the file's stem is not)" : ""));
  }
  return name;
}

Result<Workload> ReadWorkload(const toml::table& root, const fs::path& file) {
  KOPE_RETURN_IF_ERROR(
      CheckKeys(root, "", {"name", "model", "run", "requests", "accuracy", "extract"}));
  Workload w;
  w.file = file;
  KOPE_ASSIGN_OR_RETURN(w.name, ReadName(root, file));
  KOPE_ASSIGN_OR_RETURN(w.model, ReadModel(root, file.parent_path()));
  KOPE_ASSIGN_OR_RETURN(w.run, ReadRun(root));
  KOPE_ASSIGN_OR_RETURN(w.requests, ReadRequests(root));
  KOPE_ASSIGN_OR_RETURN(w.accuracy, ReadAccuracy(root));
  KOPE_ASSIGN_OR_RETURN(const toml::table* extract, OptionalTable(root, "extract"));
  KOPE_RETURN_IF_ERROR(CheckKeys(*extract, "extract", {"top"}));
  KOPE_ASSIGN_OR_RETURN(w.extract_top, IntegerField(*extract, "extract", "top", w.extract_top));
  return w;
}

}  // namespace

std::string_view ModelSourceName(ModelSource source) {
  switch (source) {
    case ModelSource::kConfig:
      return "config";
    case ModelSource::kCheckpoint:
      return "checkpoint";
    case ModelSource::kScript:
      return "script";
  }
  return "config";
}

Result<Workload> ParseWorkload(std::string_view text, const fs::path& file) {
  const std::string shown = file.string();
  std::error_code ec;
  fs::path absolute = fs::absolute(file, ec).lexically_normal();
  if (ec) absolute = file;
  toml::table root;
  try {
    root = toml::parse(text, shown);
  } catch (const toml::parse_error& e) {
    const toml::source_position& at = e.source().begin;
    return Status::InvalidArgument(shown + ": line " + std::to_string(at.line) + ", column " +
                                   std::to_string(at.column) +
                                   ": TOML syntax error: " + std::string(e.description()));
  }
  Result<Workload> w = ReadWorkload(root, absolute);
  if (!w.ok()) return Status(w.status().code(), shown + ": " + w.status().message());
  return w;
}

Result<Workload> LoadWorkload(const fs::path& path) {
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) {
    return Status::NotFound(path.string() + ": no such workload file");
  }
  KOPE_ASSIGN_OR_RETURN(std::string text, ReadFileText(path));
  return ParseWorkload(text, path);
}

std::string WorkloadToJson(const Workload& w) {
  const WorkloadModel& m = w.model;
  json model = {{"source", ModelSourceName(m.source)},
                {"architecture", m.architecture.empty() ? json(nullptr) : json(m.architecture)},
                {"config", json::parse(m.config_json)},
                {"seed", m.seed},
                {"path", m.path.empty() ? json(nullptr) : json(m.path.string())}};
  json requests = json::array();
  for (const RequestEntry& r : w.requests) {
    requests.push_back(
        {{"batch", r.batch}, {"prompt", r.prompt}, {"decode", r.decode}, {"weight", r.weight}});
  }
  const AccuracyGate& a = w.accuracy;
  json accuracy = {{"prompts", a.prompts},
                   {"random_prompts", a.random_prompts},
                   {"min_token_match", a.min_token_match},
                   {"max_logit_diff", a.max_logit_diff ? json(*a.max_logit_diff) : json(nullptr)}};
  json out = {{"schema", 1},
              {"name", w.name},
              {"file", w.file.string()},
              {"model", model},
              {"run",
               {{"dtype", w.run.dtype},
                {"device", w.run.device},
                {"attention", w.run.attention},
                {"mode", w.run.mode}}},
              {"requests", requests},
              {"accuracy", accuracy},
              {"extract", {{"top", w.extract_top}}}};
  return out.dump(2) + "\n";
}

}  // namespace kope::deploy
