#include "task_table.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <optional>
#include <set>
#include <utility>

#include "distribution.h"
#include "toml_fields.h"

namespace kope::task_internal {
namespace {

constexpr const char* kLanguages[] = {"cpp", "cuda", "torch"};

bool IsTaskName(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '-') return false;
  }
  return true;
}

Result<std::string> ReadName(const toml::table& table, const std::string& path,
                             std::string_view key) {
  KOPE_ASSIGN_OR_RETURN(const toml::node* node, Required(table, path, key));
  const std::string field = FieldPath(path, key);
  KOPE_ASSIGN_OR_RETURN(std::string name, AsString(*node, field));
  if (!IsTaskName(name)) {
    return FieldError(field, "'" + name + "' must be non-empty letters, digits, '_' and '-'");
  }
  return name;
}

Result<TensorSpec> ReadTensor(const toml::node& node, const std::string& path, bool is_input) {
  KOPE_ASSIGN_OR_RETURN(const toml::table* table, AsTable(node, path));
  if (is_input) {
    KOPE_RETURN_IF_ERROR(CheckKeys(*table, path, {"name", "dtype", "shape", "distribution"}));
  } else {
    KOPE_RETURN_IF_ERROR(CheckKeys(*table, path, {"name", "dtype", "shape"}));
  }
  TensorSpec spec;
  KOPE_ASSIGN_OR_RETURN(const toml::node* name, Required(*table, path, "name"));
  KOPE_ASSIGN_OR_RETURN(spec.name, AsString(*name, FieldPath(path, "name")));
  if (!IsCIdentifier(spec.name)) {
    return FieldError(FieldPath(path, "name"),
                      "'" + spec.name +
                          "' is not a C identifier (letters, digits and '_', not "
                          "starting with a digit, no keyword)");
  }

  KOPE_ASSIGN_OR_RETURN(const toml::node* dtype_node, Required(*table, path, "dtype"));
  KOPE_ASSIGN_OR_RETURN(std::string dtype_name, AsString(*dtype_node, FieldPath(path, "dtype")));
  std::optional<DType> dtype = ParseDType(dtype_name);
  if (!dtype) {
    return FieldError(FieldPath(path, "dtype"), "unknown dtype '" + dtype_name +
                                                    "' (expected one of f32, f64, f16, bf16, "
                                                    "i32, i64, bool)");
  }
  spec.dtype = *dtype;

  const std::string shape_path = FieldPath(path, "shape");
  KOPE_ASSIGN_OR_RETURN(const toml::node* shape_node, Required(*table, path, "shape"));
  KOPE_ASSIGN_OR_RETURN(const toml::array* shape, AsArray(*shape_node, shape_path));
  if (shape->size() > KOPE_MAX_DIMS) {
    return FieldError(shape_path, std::to_string(shape->size()) + " dimensions; at most " +
                                      std::to_string(KOPE_MAX_DIMS) + " (KOPE_MAX_DIMS)");
  }
  for (size_t i = 0; i < shape->size(); ++i) {
    KOPE_ASSIGN_OR_RETURN(Expr dim, ReadExpr(*shape->get(i), IndexPath(shape_path, i)));
    spec.shape.push_back(std::move(dim));
  }

  if (is_input) {
    if (const toml::node* d = table->get("distribution")) {
      KOPE_ASSIGN_OR_RETURN(spec.distributions,
                            ReadDistributions(*d, spec.dtype, FieldPath(path, "distribution")));
    } else {
      spec.distributions = DefaultDistributions(spec.dtype);
    }
  }
  return spec;
}

Result<std::vector<TensorSpec>> ReadTensors(const toml::table& root, std::string_view key) {
  const std::string path(key);
  KOPE_ASSIGN_OR_RETURN(const toml::node* node, Required(root, "", key));
  KOPE_ASSIGN_OR_RETURN(const toml::array* array, AsArray(*node, path));
  if (array->empty()) return FieldError(path, "needs at least one tensor");
  std::vector<TensorSpec> tensors;
  for (size_t i = 0; i < array->size(); ++i) {
    KOPE_ASSIGN_OR_RETURN(TensorSpec spec,
                          ReadTensor(*array->get(i), IndexPath(path, i), key == "inputs"));
    tensors.push_back(std::move(spec));
  }
  return tensors;
}

Status CheckUniqueNames(const Task& task) {
  std::map<std::string, std::string> seen;  // name -> field path of its first use
  auto check = [&](const std::vector<TensorSpec>& tensors, const std::string& key) -> Status {
    for (size_t i = 0; i < tensors.size(); ++i) {
      const std::string path = IndexPath(key, i);
      auto [it, inserted] = seen.emplace(tensors[i].name, path);
      if (!inserted) {
        return FieldError(FieldPath(path, "name"),
                          "'" + tensors[i].name + "' is already the name of " + it->second);
      }
    }
    return Status::Ok();
  };
  KOPE_RETURN_IF_ERROR(check(task.inputs, "inputs"));
  return check(task.outputs, "outputs");
}

Result<SizeSet> ReadSizeSet(const toml::node& node, const std::string& path, std::string label) {
  KOPE_ASSIGN_OR_RETURN(const toml::table* table, AsTable(node, path));
  SizeSet set;
  set.label = std::move(label);
  for (auto&& [key, value] : *table) {
    const std::string name(key.str());
    const std::string field = FieldPath(path, name);
    if (!IsIdentifier(name) || name == "min" || name == "max" || name == "cdiv") {
      return FieldError(field,
                        "a size name must be letters, digits and '_', not starting "
                        "with a digit, and not min, max or cdiv");
    }
    KOPE_ASSIGN_OR_RETURN(int64_t v, AsInteger(value, field));
    // Any integer here: a PyTorch problem's own integers may be 0 or negative (padding = 0,
    // hardtanh_min = -2); CheckPositiveSizes refuses a size below 1 that is not one of them.
    set.sizes[name] = v;
  }
  return set;
}

Status ReadSizes(const toml::table& root, Task* task) {
  KOPE_ASSIGN_OR_RETURN(const toml::node* node, Required(root, "", "sizes"));
  KOPE_ASSIGN_OR_RETURN(const toml::table* sizes, AsTable(*node, "sizes"));
  KOPE_RETURN_IF_ERROR(CheckKeys(*sizes, "sizes", {"bench", "check", "bench_cpp", "bench_cuda"}));

  KOPE_ASSIGN_OR_RETURN(const toml::node* bench, Required(*sizes, "sizes", "bench"));
  if (bench->is_array()) {
    return FieldError("sizes.bench", "must be one table of sizes (exactly one bench set)");
  }
  KOPE_ASSIGN_OR_RETURN(task->bench, ReadSizeSet(*bench, "sizes.bench", "bench"));
  // Optional per-language bench sets: a GPU needs far larger sizes than a CPU core.
  for (std::string_view language : kLanguages) {
    const std::string key = "bench_" + std::string(language);
    const toml::node* language_node = sizes->get(key);
    if (language_node == nullptr) continue;
    if (language_node->is_array()) return FieldError("sizes." + key, "must be one table of sizes");
    KOPE_ASSIGN_OR_RETURN(SizeSet set, ReadSizeSet(*language_node, "sizes." + key, "bench"));
    task->language_bench[std::string(language)] = std::move(set);
  }

  KOPE_ASSIGN_OR_RETURN(const toml::node* check_node, Required(*sizes, "sizes", "check"));
  if (check_node->is_table()) {
    return FieldError("sizes.check", "must be an array of tables: check = [ { ... }, ... ]");
  }
  KOPE_ASSIGN_OR_RETURN(const toml::array* checks, AsArray(*check_node, "sizes.check"));
  if (checks->empty()) return FieldError("sizes.check", "needs at least one size set");
  for (size_t i = 0; i < checks->size(); ++i) {
    const std::string label = IndexPath("check", i);
    KOPE_ASSIGN_OR_RETURN(SizeSet set, ReadSizeSet(*checks->get(i), "sizes." + label, label));
    task->checks.push_back(std::move(set));
  }
  return Status::Ok();
}

Result<ToleranceSpec> ReadTolerance(const toml::table& root) {
  ToleranceSpec spec;
  const toml::node* node = root.get("tolerance");
  if (node == nullptr) return spec;
  KOPE_ASSIGN_OR_RETURN(const toml::table* table, AsTable(*node, "tolerance"));
  KOPE_RETURN_IF_ERROR(CheckKeys(*table, "tolerance", {"rtol", "atol", "reduction"}));
  for (std::string_view key : {"rtol", "atol"}) {
    const toml::node* value = table->get(key);
    if (value == nullptr) continue;
    const std::string field = FieldPath("tolerance", key);
    KOPE_ASSIGN_OR_RETURN(double v, AsNumber(*value, field));
    if (v < 0) return FieldError(field, "must be >= 0");
    (key == "rtol" ? spec.rtol : spec.atol) = v;
  }
  if (const toml::node* reduction = table->get("reduction")) {
    KOPE_ASSIGN_OR_RETURN(spec.reduction, ReadExpr(*reduction, "tolerance.reduction"));
  }
  return spec;
}

// `[baseline]` or `[reference]`: language -> source path as written.
Result<std::map<std::string, KernelSource>> ReadSources(const toml::table& table,
                                                        const std::string& path) {
  KOPE_RETURN_IF_ERROR(CheckKeys(table, path, {kLanguages[0], kLanguages[1], kLanguages[2]}));
  if (table.empty()) {
    return FieldError(path,
                      "names no source (expected a language key, e.g. cpp = \"" + path + ".cc\")");
  }
  std::map<std::string, KernelSource> sources;
  for (auto&& [key, value] : table) {
    const std::string language(key.str());
    const std::string field = FieldPath(path, language);
    KOPE_ASSIGN_OR_RETURN(std::string file, AsString(value, field));
    if (file.empty()) return FieldError(field, "must name a source file");
    sources[language] = KernelSource{file, language};
  }
  return sources;
}

Status ReadKernels(const toml::table& root, Task* task) {
  KOPE_ASSIGN_OR_RETURN(const toml::node* baseline, Required(root, "", "baseline"));
  KOPE_ASSIGN_OR_RETURN(const toml::table* baseline_table, AsTable(*baseline, "baseline"));
  KOPE_ASSIGN_OR_RETURN(task->baselines, ReadSources(*baseline_table, "baseline"));
  if (const toml::node* reference = root.get("reference")) {
    KOPE_ASSIGN_OR_RETURN(const toml::table* reference_table, AsTable(*reference, "reference"));
    KOPE_ASSIGN_OR_RETURN(task->references, ReadSources(*reference_table, "reference"));
  }
  return Status::Ok();
}

// `[torch]`: present exactly when the baseline is a PyTorch problem.
Status ReadTorch(const toml::table& root, Task* task) {
  const toml::node* node = root.get("torch");
  const bool torch_baseline = task->baselines.count("torch") > 0;
  if (node == nullptr) {
    if (torch_baseline) {
      return FieldError("torch",
                        "missing: a task whose baseline is a PyTorch problem names its "
                        "size globals and parameters here (kope import writes it)");
    }
    return Status::Ok();
  }
  if (!torch_baseline) return FieldError("torch", "only a task with baseline.torch has one");
  KOPE_ASSIGN_OR_RETURN(const toml::table* table, AsTable(*node, "torch"));
  KOPE_RETURN_IF_ERROR(CheckKeys(*table, "torch", {"globals", "parameters", "ops", "scalars"}));
  TorchProblem torch;
  for (const char* key : {"globals", "parameters", "scalars"}) {
    const toml::node* list = table->get(key);
    if (list == nullptr) continue;
    KOPE_ASSIGN_OR_RETURN(const toml::array* array, AsArray(*list, FieldPath("torch", key)));
    for (size_t i = 0; i < array->size(); ++i) {
      KOPE_ASSIGN_OR_RETURN(std::string name,
                            AsString(*array->get(i), IndexPath(FieldPath("torch", key), i)));
      const std::string_view k = key;
      (k == "globals"      ? torch.globals
       : k == "parameters" ? torch.parameters
                           : torch.scalars)
          .push_back(name);
    }
  }
  if (torch.parameters.size() > task->inputs.size()) {
    return FieldError("torch.parameters", "names " + std::to_string(torch.parameters.size()) +
                                              " parameters, but the task has only " +
                                              std::to_string(task->inputs.size()) + " inputs");
  }
  const size_t forward_inputs = task->inputs.size() - torch.parameters.size();
  for (size_t i = 0; i < torch.scalars.size(); ++i) {
    const std::string& name = torch.scalars[i];
    auto it = std::find_if(task->inputs.begin(), task->inputs.begin() + forward_inputs,
                           [&](const TensorSpec& t) { return t.name == name; });
    // One element: shape [] or [1] (kope import writes a 0-d tensor's shape as [1]).
    const bool one = it != task->inputs.begin() + forward_inputs &&
                     (it->shape.empty() || (it->shape.size() == 1 && [&] {
                        Result<int64_t> n = it->shape[0].Evaluate({});
                        return n.ok() && *n == 1;
                      }()));
    if (!one) {
      return FieldError(IndexPath("torch.scalars", i),
                        "'" + name + "' is not a forward input of one element (shape [] or [1])");
    }
  }
  if (const toml::node* ops = table->get("ops")) {
    KOPE_ASSIGN_OR_RETURN(std::string v, AsString(*ops, "torch.ops"));
    if (v != "allow" && v != "forbid") {
      return FieldError("torch.ops", "'" + v + "' is not 'allow' or 'forbid'");
    }
    torch.forbid_torch_ops = v == "forbid";
  }
  for (const std::string& g : torch.globals) {
    for (const SizeSet* set : {&task->bench}) {
      if (set->sizes.count(g) == 0) {
        return FieldError("torch.globals", "'" + g + "' is not a size of sizes.bench");
      }
    }
  }
  task->torch = std::move(torch);
  return Status::Ok();
}

// Sizes are >= 1, except a PyTorch problem's own integers, which may be 0 or negative
// (padding = 0, hardtanh_min = -2).
Status CheckPositiveSizes(const Task& task) {
  auto check = [&](const SizeSet& set, const std::string& path) -> Status {
    for (const auto& [name, value] : set.sizes) {
      const bool problem_integer =
          task.torch && std::find(task.torch->globals.begin(), task.torch->globals.end(), name) !=
                            task.torch->globals.end();
      if (value < 1 && !problem_integer) {
        return FieldError(FieldPath(path, name), "must be >= 1, got " + std::to_string(value));
      }
    }
    return Status::Ok();
  };
  KOPE_RETURN_IF_ERROR(check(task.bench, "sizes.bench"));
  for (const auto& [language, set] : task.language_bench) {
    KOPE_RETURN_IF_ERROR(check(set, "sizes.bench_" + language));
  }
  for (size_t i = 0; i < task.checks.size(); ++i) {
    KOPE_RETURN_IF_ERROR(check(task.checks[i], IndexPath("sizes.check", i)));
  }
  return Status::Ok();
}

Status ReadRoofline(const toml::table& root, Task* task) {
  const toml::node* node = root.get("roofline");
  if (node == nullptr) return Status::Ok();
  KOPE_ASSIGN_OR_RETURN(const toml::table* table, AsTable(*node, "roofline"));
  KOPE_RETURN_IF_ERROR(CheckKeys(*table, "roofline", {"bytes", "flops"}));
  if (const toml::node* bytes = table->get("bytes")) {
    KOPE_ASSIGN_OR_RETURN(task->bytes, ReadExpr(*bytes, "roofline.bytes"));
  }
  if (const toml::node* flops = table->get("flops")) {
    KOPE_ASSIGN_OR_RETURN(task->flops, ReadExpr(*flops, "roofline.flops"));
  }
  return Status::Ok();
}

}  // namespace

Result<Task> ReadTaskTable(const toml::table& table) {
  KOPE_RETURN_IF_ERROR(
      CheckKeys(table, "",
                {"name", "family", "description", "inputs", "outputs", "sizes", "tolerance",
                 "baseline", "reference", "roofline", "torch", "captured_inputs"}));
  Task task;
  KOPE_ASSIGN_OR_RETURN(task.name, ReadName(table, "", "name"));
  KOPE_ASSIGN_OR_RETURN(task.family, ReadName(table, "", "family"));
  if (const toml::node* description = table.get("description")) {
    KOPE_ASSIGN_OR_RETURN(task.description, AsString(*description, "description"));
  }
  if (const toml::node* captured = table.get("captured_inputs")) {
    KOPE_ASSIGN_OR_RETURN(std::string file, AsString(*captured, "captured_inputs"));
    if (file.empty()) return FieldError("captured_inputs", "must name a safetensors file");
    task.captured_inputs = file;
  }
  KOPE_ASSIGN_OR_RETURN(task.inputs, ReadTensors(table, "inputs"));
  KOPE_ASSIGN_OR_RETURN(task.outputs, ReadTensors(table, "outputs"));
  KOPE_RETURN_IF_ERROR(CheckUniqueNames(task));
  KOPE_RETURN_IF_ERROR(ReadSizes(table, &task));
  KOPE_ASSIGN_OR_RETURN(task.tolerance, ReadTolerance(table));
  KOPE_RETURN_IF_ERROR(ReadKernels(table, &task));
  KOPE_RETURN_IF_ERROR(ReadRoofline(table, &task));
  KOPE_RETURN_IF_ERROR(ReadTorch(table, &task));
  KOPE_RETURN_IF_ERROR(CheckPositiveSizes(task));
  return task;
}

}  // namespace kope::task_internal
