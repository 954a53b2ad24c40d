#include "kope/pack/adapter.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <numeric>
#include <regex>
#include <sstream>

#include "kope/base/file.h"

namespace kope::pack {
namespace {

using Shape = std::vector<int64_t>;

// The values one size set gives the pattern names ("..." for the leading dimensions).
struct Bindings {
  std::map<std::string, int64_t> names;
  std::optional<Shape> leading;
};

bool IsInteger(const std::string& s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return std::isdigit(c); });
}

bool FitShape(const std::vector<std::string>& pattern, const Shape& shape, Bindings& b) {
  const bool ellipsis = !pattern.empty() && pattern[0] == "...";
  const size_t fixed = pattern.size() - (ellipsis ? 1 : 0);
  if (ellipsis ? shape.size() < fixed : shape.size() != fixed) return false;
  const size_t lead = shape.size() - fixed;
  if (ellipsis) {
    Shape leading(shape.begin(), shape.begin() + static_cast<std::ptrdiff_t>(lead));
    if (b.leading && *b.leading != leading) return false;
    b.leading = leading;
  }
  for (size_t i = 0; i < fixed; ++i) {
    const std::string& p = pattern[i + (ellipsis ? 1 : 0)];
    const int64_t dim = shape[lead + i];
    if (IsInteger(p)) {
      if (std::stoll(p) != dim) return false;
      continue;
    }
    auto [it, inserted] = b.names.emplace(p, dim);
    if (!inserted && it->second != dim) return false;
  }
  return true;
}

bool FitDtype(const RoleSpec& role, DType dtype) {
  if (role.dtypes.empty()) return true;
  return std::find(role.dtypes.begin(), role.dtypes.end(), DTypeName(dtype)) != role.dtypes.end();
}

// The task's shapes at every size set: [set][tensor], inputs then outputs.
Result<std::vector<std::vector<Shape>>> ShapesBySet(const Task& task) {
  std::vector<std::vector<Shape>> out;
  for (const SizeSet& set : AllSizeSets(task)) {
    std::vector<Shape> shapes;
    for (const auto* list : {&task.inputs, &task.outputs}) {
      for (const TensorSpec& t : *list) {
        KOPE_ASSIGN_OR_RETURN(Shape s, ResolveShape(t, set));
        shapes.push_back(std::move(s));
      }
    }
    out.push_back(std::move(shapes));
  }
  return out;
}

std::string Lower(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (std::isalnum(static_cast<unsigned char>(c))) out += static_cast<char>(std::tolower(c));
  }
  return out;
}

// How well a tensor's name agrees with a role's: 2 equal, 1 one holds the other, 0 neither.
int NameAgreement(const std::string& tensor, const std::string& role) {
  const std::string t = Lower(tensor), r = Lower(role);
  if (t == r) return 2;
  const size_t dot = tensor.rfind('.');  // a module parameter: "norm.weight"
  if (dot != std::string::npos && Lower(tensor.substr(dot + 1)) == r) return 2;
  return t.find(r) != std::string::npos || r.find(t) != std::string::npos ? 1 : 0;
}

struct Assignment {
  std::vector<int> inputs, outputs;
  Bindings first;                                   // the bindings at the first size set
  std::map<std::string, std::set<int64_t>> values;  // each name's values over the sets
};

// Whether `a` fits at every size set; fills its bindings.
bool Fits(const KernelSpec& spec, const Task& task, const std::vector<std::vector<Shape>>& shapes,
          Assignment& a) {
  const size_t n_in = task.inputs.size();
  for (size_t k = 0; k < a.inputs.size(); ++k) {
    if (!FitDtype(spec.inputs[k], task.inputs[a.inputs[k]].dtype)) return false;
  }
  for (size_t k = 0; k < a.outputs.size(); ++k) {
    if (!FitDtype(spec.outputs[k], task.outputs[a.outputs[k]].dtype)) return false;
  }
  for (size_t s = 0; s < shapes.size(); ++s) {
    Bindings b;
    for (size_t k = 0; k < a.inputs.size(); ++k) {
      if (!FitShape(spec.inputs[k].shape, shapes[s][a.inputs[k]], b)) return false;
    }
    for (size_t k = 0; k < a.outputs.size(); ++k) {
      if (!FitShape(spec.outputs[k].shape, shapes[s][n_in + a.outputs[k]], b)) return false;
    }
    for (const auto& [name, v] : b.names) a.values[name].insert(v);
    if (s == 0) a.first = b;
  }
  return true;
}

int Agreement(const KernelSpec& spec, const Task& task, const Assignment& a) {
  int score = 0;
  for (size_t k = 0; k < a.inputs.size(); ++k) {
    score += NameAgreement(task.inputs[a.inputs[k]].name, spec.inputs[k].role);
  }
  for (size_t k = 0; k < a.outputs.size(); ++k) {
    score += NameAgreement(task.outputs[a.outputs[k]].name, spec.outputs[k].role);
  }
  return score;
}

std::vector<int> Iota(size_t n) {
  std::vector<int> v(n);
  std::iota(v.begin(), v.end(), 0);
  return v;
}

// The value `name = number` assigns in the task's baseline or reference sources, if any.
std::optional<double> AttributeInSources(const Task& task, const std::string& name) {
  const std::regex assignment("\\b" + name + R"(\s*(?::\s*float\s*)?=\s*([-+]?[0-9][0-9.eE+-]*))");
  for (const auto* sources : {&task.baselines, &task.references}) {
    for (const auto& [language, source] : *sources) {
      Result<std::string> text = ReadFileText(source.path);
      if (!text.ok()) continue;
      std::smatch m;
      if (std::regex_search(*text, m, assignment)) {
        try {
          return std::stod(m[1].str());
        } catch (const std::exception&) {
          continue;
        }
      }
    }
  }
  return std::nullopt;
}

std::map<std::string, double> AttributesFor(const KernelSpec& spec, const Task& task,
                                            const Assignment& a) {
  std::map<std::string, double> out;
  for (const auto& [name, fallback] : spec.attributes) {
    auto it = a.values.find(name);
    if (it != a.values.end() && it->second.size() == 1) {
      out[name] = static_cast<double>(*it->second.begin());
    } else if (std::optional<double> v = AttributeInSources(task, name)) {
      out[name] = *v;
    } else {
      out[name] = fallback;
    }
  }
  return out;
}

std::string FormatNumber(double v) {
  std::string s = fmt::format("{:.9g}", v);
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return s;
}

}  // namespace

Result<std::optional<RoleBinding>> BindRoles(const KernelSpec& spec, const Task& task) {
  if (spec.inputs.size() != task.inputs.size() || spec.outputs.size() != task.outputs.size()) {
    return std::optional<RoleBinding>();
  }
  KOPE_ASSIGN_OR_RETURN(auto shapes, ShapesBySet(task));
  std::optional<Assignment> best;
  int best_score = -1;
  std::vector<int> in = Iota(task.inputs.size());
  do {
    std::vector<int> out = Iota(task.outputs.size());
    do {
      Assignment a;
      a.inputs = in;
      a.outputs = out;
      if (!Fits(spec, task, shapes, a)) continue;
      const int score = Agreement(spec, task, a);
      if (score > best_score) best_score = score, best = std::move(a);
    } while (std::next_permutation(out.begin(), out.end()));
  } while (std::next_permutation(in.begin(), in.end()));
  if (!best) return std::optional<RoleBinding>();
  RoleBinding binding;
  binding.inputs = best->inputs;
  binding.outputs = best->outputs;
  binding.identity =
      best->inputs == Iota(task.inputs.size()) && best->outputs == Iota(task.outputs.size());
  binding.attributes = AttributesFor(spec, task, *best);
  return std::optional<RoleBinding>(std::move(binding));
}

std::map<std::string, double> MarkedAttributes(std::string_view source) {
  static const std::regex marked(
      R"(=\s*([-+]?[0-9][0-9.eE+-]*)[fF]?\s*;\s*//\s*kope:attr\s+([A-Za-z_][A-Za-z0-9_]*))");
  std::map<std::string, double> out;
  const std::string text(source);
  for (auto it = std::sregex_iterator(text.begin(), text.end(), marked);
       it != std::sregex_iterator(); ++it) {
    try {
      out[(*it)[2].str()] = std::stod((*it)[1].str());
    } catch (const std::exception&) {
    }
  }
  return out;
}

std::string SetAttributes(std::string_view source, const std::map<std::string, double>& values) {
  std::istringstream in{std::string(source)};
  std::string out, line;
  static const std::regex marked(
      R"((=\s*)([-+]?[0-9][0-9.eE+-]*)([fF]?)(\s*;\s*//\s*kope:attr\s+)([A-Za-z_][A-Za-z0-9_]*))");
  while (std::getline(in, line)) {
    std::smatch m;
    if (std::regex_search(line, m, marked)) {
      auto it = values.find(m[5].str());
      if (it != values.end()) {
        line = m.prefix().str() + m[1].str() + FormatNumber(it->second) + m[3].str() + m[4].str() +
               m[5].str() + m.suffix().str();
      }
    }
    out += line + "\n";
  }
  return out;
}

std::string AdapterSource(const KernelSpec& spec, std::string_view kernel_source,
                          const RoleBinding& binding, std::string_view task_name) {
  const std::map<std::string, double> marked = MarkedAttributes(kernel_source);
  bool same_attributes = true;
  for (const auto& [name, value] : binding.attributes) {
    auto it = marked.find(name);
    same_attributes = same_attributes && (it == marked.end() || it->second == value);
  }
  std::string body = SetAttributes(kernel_source, binding.attributes);
  if (binding.identity) return same_attributes ? std::string(kernel_source) : body;
  std::string in, out;
  for (int i : binding.inputs) in += fmt::format("{}inputs[{}]", in.empty() ? "" : ", ", i);
  for (int i : binding.outputs) out += fmt::format("{}outputs[{}]", out.empty() ? "" : ", ", i);
  const size_t n_in = binding.inputs.size(), n_out = binding.outputs.size();
  return fmt::format(
      "// Pack kernel {}/{} (op {}) serving {}: the task's tensors in the kernel's order.\n"
      "#define kope_kernel kope_pack_kernel\n{}#undef kope_kernel\n\n"
      "extern \"C\" int kope_kernel(const kope_tensor* inputs, int n_inputs, kope_tensor* "
      "outputs,\n                           int n_outputs, void* stream) {{\n"
      "  if (n_inputs != {} || n_outputs != {}) return 1;\n"
      "  const kope_tensor in[{}] = {{{}}};\n  kope_tensor out[{}] = {{{}}};\n"
      "  return kope_pack_kernel(in, {}, out, {}, stream);\n}}\n",
      spec.pack, spec.name, spec.op, task_name, body, n_in, n_out, n_in, in, n_out, out, n_in,
      n_out);
}

Result<std::optional<std::string>> AdaptKernel(const KernelSpec& spec,
                                               std::string_view kernel_source, const Task& task) {
  KOPE_ASSIGN_OR_RETURN(std::optional<RoleBinding> binding, BindRoles(spec, task));
  if (!binding) return std::optional<std::string>();
  return std::optional<std::string>(AdapterSource(spec, kernel_source, *binding, task.name));
}

}  // namespace kope::pack
