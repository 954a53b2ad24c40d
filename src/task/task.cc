#include "kope/task/task.h"

#include <toml++/toml.h>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <sstream>
#include <system_error>
#include <utility>

#include "kope/base/file.h"
#include "task_table.h"
#include "toml_fields.h"

namespace kope {
namespace {

namespace fs = std::filesystem;
using task_internal::FieldError;
using task_internal::FieldPath;
using task_internal::IndexPath;

// Every expression of the task with the field path that holds it.
std::vector<std::pair<std::string, const Expr*>> Expressions(const Task& task) {
  std::vector<std::pair<std::string, const Expr*>> out;
  auto add_tensors = [&](const std::vector<TensorSpec>& tensors, const std::string& key) {
    for (size_t t = 0; t < tensors.size(); ++t) {
      const std::string shape = FieldPath(IndexPath(key, t), "shape");
      for (size_t d = 0; d < tensors[t].shape.size(); ++d) {
        out.emplace_back(IndexPath(shape, d), &tensors[t].shape[d]);
      }
    }
  };
  add_tensors(task.inputs, "inputs");
  add_tensors(task.outputs, "outputs");
  for (size_t t = 0; t < task.inputs.size(); ++t) {
    const auto& dists = task.inputs[t].distributions;
    const std::string field = FieldPath(IndexPath("inputs", t), "distribution");
    for (size_t k = 0; k < dists.size(); ++k) {
      if (!dists[k].fan_in) continue;
      out.emplace_back(FieldPath(dists.size() == 1 ? field : IndexPath(field, k), "fan_in"),
                       &*dists[k].fan_in);
    }
  }
  if (task.tolerance.reduction) out.emplace_back("tolerance.reduction", &*task.tolerance.reduction);
  if (task.bytes) out.emplace_back("roofline.bytes", &*task.bytes);
  if (task.flops) out.emplace_back("roofline.flops", &*task.flops);
  return out;
}

std::string SizeSetPath(const SizeSet& set) { return "sizes." + set.label; }

// Every size a expression uses is defined in every set, and every size a set
// defines is used somewhere (an unused one is most likely a typo).
Status CheckSizeNames(const Task& task) {
  const auto expressions = Expressions(task);
  std::set<std::string> used;
  // A PyTorch problem reads its own integers (a pooling's kernel_size): sizes in their own right.
  if (task.torch) used.insert(task.torch->globals.begin(), task.torch->globals.end());
  for (const auto& [path, expr] : expressions) {
    for (const std::string& name : expr->Names()) used.insert(name);
  }
  for (const SizeSet& set : AllSizeSets(task)) {
    for (const auto& [path, expr] : expressions) {
      for (const std::string& name : expr->Names()) {
        if (set.sizes.count(name) == 0) {
          return FieldError(SizeSetPath(set), "size '" + name + "' is not defined (" + path +
                                                  " uses it: '" + expr->text() + "')");
        }
      }
    }
    for (const auto& [name, value] : set.sizes) {
      if (used.count(name) == 0) {
        return FieldError(FieldPath(SizeSetPath(set), name),
                          "size '" + name +
                              "' is used by no shape, tolerance.reduction or "
                              "roofline expression");
      }
    }
  }
  return Status::Ok();
}

// Evaluates every expression in every set; shapes and reductions must be >= 1,
// roofline bytes >= 1 and flops >= 0.
Status CheckValues(const Task& task) {
  for (const SizeSet& set : AllSizeSets(task)) {
    for (const auto& [path, expr] : Expressions(task)) {
      Result<int64_t> value = expr->Evaluate(set.sizes);
      if (!value.ok()) {
        return FieldError(path, value.status().message() + " in " + SizeSetPath(set));
      }
      const int64_t minimum = path == "roofline.flops" ? 0 : 1;
      if (*value < minimum) {
        return FieldError(path, "'" + expr->text() + "' is " + std::to_string(*value) + " in " +
                                    SizeSetPath(set) +
                                    "; it must be >= " + std::to_string(minimum));
      }
    }
    int64_t total = 0;  // bytes of every tensor at the set, each at most kMaxSizeSetBytes
    auto check_total = [&](const std::vector<TensorSpec>& tensors, const std::string& key) {
      for (size_t t = 0; t < tensors.size(); ++t) {
        Result<std::vector<int64_t>> shape = ResolveShape(tensors[t], set);
        if (!shape.ok())
          return FieldError(FieldPath(IndexPath(key, t), "shape"), shape.status().message());
        int64_t bytes = static_cast<int64_t>(DTypeSize(tensors[t].dtype));
        for (int64_t d : *shape) bytes *= d;
        total += bytes;
      }
      return Status::Ok();
    };
    KOPE_RETURN_IF_ERROR(check_total(task.inputs, "inputs"));
    KOPE_RETURN_IF_ERROR(check_total(task.outputs, "outputs"));
    if (total > kMaxSizeSetBytes) {
      return FieldError(SizeSetPath(set), "its tensors take " + std::to_string(total) +
                                              " bytes together, more than the " +
                                              std::to_string(kMaxSizeSetBytes) + " a task may use");
    }
  }
  return Status::Ok();
}

// Some check set has a size equal to 1, and some check set an odd size > 1,
// so that edge handling and sizes that are no multiple of a tile get tested.
Status CheckCoverage(const Task& task) {
  // An imported PyTorch problem gets the odd and unit sizes its model accepts (the importer
  // tries them); some models accept neither (a loss over a fixed feature size).
  if (task.torch) return Status::Ok();
  bool has_one = false;
  bool has_odd = false;
  for (const SizeSet& set : task.checks) {
    for (const auto& [name, value] : set.sizes) {
      has_one = has_one || value == 1;
      has_odd = has_odd || (value > 1 && value % 2 == 1);
    }
  }
  if (!has_one) {
    return FieldError("sizes.check",
                      "no check set has a size equal to 1; add one, e.g. a "
                      "set with a dimension of 1");
  }
  if (!has_odd) {
    return FieldError("sizes.check",
                      "no check set has an odd size > 1; add one that is no "
                      "multiple of a tile, e.g. 7 or 33");
  }
  return Status::Ok();
}

// Makes every source path absolute, checking that it names a regular file
// inside `dir` (which is canonical).
// A file a task names: relative, inside the task folder (links included), regular.
Result<fs::path> ResolveTaskFile(const fs::path& dir, const std::string& field,
                                 const fs::path& written) {
  if (written.is_absolute()) {
    return FieldError(field, "'" + written.string() + "' must be relative to the task folder");
  }
  const fs::path normal = written.lexically_normal();
  if (!normal.empty() && *normal.begin() == "..") {
    return FieldError(field, "'" + written.string() + "' is outside the task folder");
  }
  std::error_code ec;
  const fs::path resolved = fs::canonical(dir / written, ec);
  if (ec) {
    return FieldError(field, "'" + written.string() + "' does not exist in the task folder");
  }
  const fs::path inside = resolved.lexically_relative(dir);
  if (inside.empty() || *inside.begin() == "..") {
    return FieldError(field,
                      "'" + written.string() + "' leads outside the task folder (through a link)");
  }
  if (!fs::is_regular_file(resolved, ec)) {
    return FieldError(field, "'" + written.string() + "' is not a regular file");
  }
  return resolved;
}

Status ResolveSources(const fs::path& dir, const std::string& key,
                      std::map<std::string, KernelSource>* sources) {
  for (auto& [language, source] : *sources) {
    KOPE_ASSIGN_OR_RETURN(source.path, ResolveTaskFile(dir, FieldPath(key, language), source.path));
  }
  return Status::Ok();
}

Result<toml::table> ParseToml(const std::string& text, const std::string& file) {
  try {
    return toml::parse(text, file);
  } catch (const toml::parse_error& e) {
    const toml::source_position& at = e.source().begin;
    return Status::InvalidArgument(file + ": line " + std::to_string(at.line) + ", column " +
                                   std::to_string(at.column) +
                                   ": TOML syntax error: " + std::string(e.description()));
  }
}

}  // namespace

Result<Task> LoadTask(const fs::path& dir) {
  const fs::path file = dir / "task.toml";
  const std::string file_name = file.string();
  KOPE_ASSIGN_OR_RETURN(std::string text, ReadFileText(file));
  KOPE_ASSIGN_OR_RETURN(toml::table table, ParseToml(text, file_name));

  Result<Task> read = task_internal::ReadTaskTable(table);
  if (!read.ok()) return read.status().WithContext(file_name);
  Task task = std::move(read).value();

  std::error_code ec;
  task.dir = fs::canonical(dir, ec);
  if (ec) return Status::IoError(dir.string() + ": " + ec.message());
  Status status = CheckSizeNames(task);
  if (status.ok()) status = CheckValues(task);
  if (status.ok()) status = CheckCoverage(task);
  if (status.ok()) status = ResolveSources(task.dir, "baseline", &task.baselines);
  if (status.ok()) status = ResolveSources(task.dir, "reference", &task.references);
  if (status.ok() && task.captured_inputs) {
    Result<fs::path> captured = ResolveTaskFile(task.dir, "captured_inputs", *task.captured_inputs);
    if (captured.ok()) task.captured_inputs = *captured;
    status = captured.status();
  }
  if (!status.ok()) return status.WithContext(file_name);
  return task;
}

Result<Distribution> DistributionAt(const Distribution& d, const SizeSet& set) {
  if (!d.fan_in) return d;
  KOPE_ASSIGN_OR_RETURN(int64_t fan_in, d.fan_in->Evaluate(set.sizes));
  if (fan_in < 1) {
    return Status::InvalidArgument("fan_in '" + d.fan_in->text() + "' is " +
                                   std::to_string(fan_in) + " in sizes." + set.label);
  }
  const double scale = 1.0 / std::sqrt(static_cast<double>(fan_in));
  return Distribution{d.kind,    d.mean * scale, d.stddev * scale, d.low * scale, d.high * scale,
                      d.low_exp, d.high_exp,     d.num_distinct,   std::nullopt};
}

Result<std::vector<int64_t>> ResolveShape(const TensorSpec& spec, const SizeSet& sizes) {
  std::vector<int64_t> shape;
  int64_t bytes = static_cast<int64_t>(DTypeSize(spec.dtype));
  for (size_t d = 0; d < spec.shape.size(); ++d) {
    const std::string where =
        "'" + spec.name + "' dimension " + std::to_string(d) + " at " + sizes.label;
    Result<int64_t> value = spec.shape[d].Evaluate(sizes.sizes);
    if (!value.ok()) return value.status().WithContext(where);
    if (*value < 1) {
      return Status::InvalidArgument(where + ": '" + spec.shape[d].text() + "' is " +
                                     std::to_string(*value) + "; it must be >= 1");
    }
    if (__builtin_mul_overflow(bytes, *value, &bytes)) {
      return Status::InvalidArgument("'" + spec.name + "' at " + sizes.label +
                                     ": its size in bytes overflows 64 bits");
    }
    shape.push_back(*value);
  }
  if (bytes > kMaxSizeSetBytes) {
    return Status::InvalidArgument("'" + spec.name + "' at " + sizes.label + " takes " +
                                   std::to_string(bytes) + " bytes, more than the " +
                                   std::to_string(kMaxSizeSetBytes) + " a task may use");
  }
  return shape;
}

Result<Tolerance> ResolveTolerance(const ToleranceSpec& spec, DType dtype, const SizeSet& sizes) {
  if (!IsFloating(dtype)) return Tolerance{0.0, 0.0};  // integers compare exactly
  double base = 0.0;
  switch (dtype) {
    case KOPE_F32:
      base = 1e-5;
      break;
    case KOPE_F64:
      base = 1e-12;
      break;
    case KOPE_F16:
      base = 1e-3;
      break;
    case KOPE_BF16:
      base = 1.6e-2;
      break;
    default:
      break;
  }
  double scale = 1.0;
  if (spec.reduction) {
    Result<int64_t> terms = spec.reduction->Evaluate(sizes.sizes);
    if (!terms.ok()) return terms.status().WithContext("tolerance.reduction at " + sizes.label);
    if (*terms < 1) {
      return Status::InvalidArgument("tolerance.reduction at " + sizes.label + ": '" +
                                     spec.reduction->text() + "' is " + std::to_string(*terms) +
                                     "; it must be >= 1");
    }
    scale = std::sqrt(static_cast<double>(*terms));
  }
  Tolerance tolerance;
  tolerance.rtol = spec.rtol ? *spec.rtol : base * scale;
  tolerance.atol = spec.atol ? *spec.atol : base * scale;
  return tolerance;
}

const SizeSet& BenchSizes(const Task& task, std::string_view language) {
  auto it = task.language_bench.find(std::string(language));
  return it == task.language_bench.end() ? task.bench : it->second;
}

std::vector<SizeSet> SizeSetsFor(const Task& task, std::string_view language) {
  std::vector<SizeSet> sets = task.checks;
  sets.push_back(BenchSizes(task, language));
  return sets;
}

std::vector<SizeSet> AllSizeSets(const Task& task) {
  std::vector<SizeSet> sets = task.checks;
  sets.push_back(task.bench);
  for (const auto& [language, set] : task.language_bench) sets.push_back(set);
  return sets;
}

}  // namespace kope
