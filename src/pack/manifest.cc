#include "kope/pack/manifest.h"

#include <toml++/toml.h>

#include <algorithm>
#include <cctype>
#include <nlohmann/json.hpp>
#include <set>

namespace kope::pack {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// Reads one manifest table; the first problem is kept, with its field path.
class Table {
 public:
  Table(const toml::table& t, std::string path) : t_(t), path_(std::move(path)) {}

  Status CheckKeys(std::initializer_list<std::string_view> allowed) const {
    for (const auto& [key, value] : t_) {
      bool known = false;
      for (std::string_view a : allowed) known = known || key.str() == a;
      if (!known) return Error(std::string(key.str()), "unknown key");
    }
    return Status::Ok();
  }
  Result<std::string> Str(std::string_view key, bool required = true) const {
    const toml::node* n = t_.get(key);
    if (n == nullptr)
      return required ? Error(key, "missing required field") : Result<std::string>("");
    if (!n->is_string()) return Error(key, "expected a string");
    return std::string(n->as_string()->get());
  }
  Result<std::vector<std::string>> Strings(std::string_view key, bool required) const {
    std::vector<std::string> out;
    const toml::node* n = t_.get(key);
    if (n == nullptr) {
      if (required) return Error(key, "missing required field");
      return out;
    }
    if (!n->is_array()) return Error(key, "expected an array of strings");
    for (const toml::node& e : *n->as_array()) {
      if (e.is_string()) {
        out.push_back(std::string(e.as_string()->get()));
      } else if (e.is_integer()) {
        out.push_back(std::to_string(e.as_integer()->get()));
      } else {
        return Error(key, "expected an array of strings");
      }
    }
    return out;
  }
  Result<bool> Bool(std::string_view key, bool fallback) const {
    const toml::node* n = t_.get(key);
    if (n == nullptr) return fallback;
    if (!n->is_boolean()) return Error(key, "expected true or false");
    return n->as_boolean()->get();
  }
  const toml::node* Get(std::string_view key) const { return t_.get(key); }
  Status Error(std::string_view key, std::string_view what) const {
    return Status::InvalidArgument(path_ + (path_.empty() ? "" : ".") + std::string(key) + ": " +
                                   std::string(what));
  }
  const std::string& path() const { return path_; }

 private:
  const toml::table& t_;
  std::string path_;
};

Result<std::vector<RoleSpec>> ReadRoles(const Table& family, std::string_view key) {
  std::vector<RoleSpec> roles;
  const toml::node* n = family.Get(key);
  if (n == nullptr) return family.Error(key, "missing required field");
  if (!n->is_array() || n->as_array()->empty()) return family.Error(key, "expected tables");
  std::set<std::string> names;
  size_t index = 0;
  for (const toml::node& e : *n->as_array()) {
    std::string path = family.path() + "." + std::string(key) + "[" + std::to_string(index++) + "]";
    if (!e.is_table()) return Status::InvalidArgument(path + ": expected a table");
    Table t(*e.as_table(), path);
    KOPE_RETURN_IF_ERROR(t.CheckKeys({"role", "shape", "dtypes"}));
    RoleSpec r;
    KOPE_ASSIGN_OR_RETURN(r.role, t.Str("role"));
    KOPE_ASSIGN_OR_RETURN(r.shape, t.Strings("shape", true));
    KOPE_ASSIGN_OR_RETURN(r.dtypes, t.Strings("dtypes", false));
    for (size_t i = 0; i < r.shape.size(); ++i) {
      if (r.shape[i] == "..." && i != 0) return t.Error("shape", "'...' may only come first");
    }
    if (!names.insert(r.role).second) return t.Error("role", "'" + r.role + "' appears twice");
    roles.push_back(std::move(r));
  }
  return roles;
}

Result<std::map<std::string, double>> ReadAttributes(const Table& family) {
  std::map<std::string, double> out;
  const toml::node* n = family.Get("attributes");
  if (n == nullptr) return out;
  if (!n->is_table()) return family.Error("attributes", "expected a table of numbers");
  for (const auto& [key, value] : *n->as_table()) {
    const std::string name(key.str());
    const bool identifier = !name.empty() && !std::isdigit(static_cast<unsigned char>(name[0])) &&
                            std::all_of(name.begin(), name.end(), [](char c) {
                              return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
                            });
    if (!identifier) {
      return family.Error("attributes." + name, "must be letters, digits and '_' (a C name)");
    }
    std::optional<double> v = value.value<double>();
    if (!v) return family.Error("attributes." + std::string(key.str()), "expected a number");
    out[std::string(key.str())] = *v;
  }
  return out;
}

Result<fs::path> InsidePack(const fs::path& dir, const std::string& relative, const Table& t,
                            std::string_view key) {
  fs::path p = fs::weakly_canonical(dir / relative);
  std::string rel = p.lexically_relative(dir).string();
  if (fs::path(relative).is_absolute() || rel.empty() || rel.rfind("..", 0) == 0) {
    return t.Error(key, "'" + relative + "' is outside the pack folder");
  }
  if (!fs::exists(p)) return t.Error(key, "'" + relative + "' does not exist");
  return p;
}

std::string LanguageOf(const fs::path& source) {
  return source.extension() == ".cu" ? "cuda" : "cpp";
}

Status ReadKernels(const fs::path& dir, const Table& family, const KernelSpec& common,
                   const std::vector<fs::path>& tasks, std::set<std::string>& names,
                   PackSource& pack) {
  const toml::node* n = family.Get("kernels");
  if (n == nullptr || !n->is_array() || n->as_array()->empty()) {
    return family.Error("kernels", "expected at least one [[families.kernels]] table");
  }
  size_t index = 0;
  for (const toml::node& e : *n->as_array()) {
    std::string path = family.path() + ".kernels[" + std::to_string(index++) + "]";
    if (!e.is_table()) return Status::InvalidArgument(path + ": expected a table");
    Table t(*e.as_table(), path);
    KOPE_RETURN_IF_ERROR(t.CheckKeys({"name", "source", "hardware", "verified"}));
    PackKernel k;
    k.spec = common;
    KOPE_ASSIGN_OR_RETURN(k.spec.name, t.Str("name"));
    KOPE_ASSIGN_OR_RETURN(std::string source, t.Str("source"));
    KOPE_ASSIGN_OR_RETURN(k.source, InsidePack(dir, source, t, "source"));
    KOPE_ASSIGN_OR_RETURN(k.spec.hardware, t.Str("hardware", false));
    KOPE_ASSIGN_OR_RETURN(k.spec.verified, t.Bool("verified", true));
    k.spec.language = LanguageOf(k.source);
    if (!names.insert(k.spec.name).second) {
      return t.Error("name", "'" + k.spec.name + "' is the name of another kernel");
    }
    k.tasks = tasks;
    pack.kernels.push_back(std::move(k));
  }
  return Status::Ok();
}

Status ReadFamily(const fs::path& dir, const Table& family, std::set<std::string>& names,
                  PackSource& pack) {
  KOPE_RETURN_IF_ERROR(family.CheckKeys(
      {"name", "family", "description", "inputs", "outputs", "attributes", "tasks", "kernels"}));
  KernelSpec common;
  common.pack = pack.name;
  KOPE_ASSIGN_OR_RETURN(common.op, family.Str("name"));
  KOPE_ASSIGN_OR_RETURN(common.family, family.Str("family"));
  KOPE_ASSIGN_OR_RETURN(common.inputs, ReadRoles(family, "inputs"));
  KOPE_ASSIGN_OR_RETURN(common.outputs, ReadRoles(family, "outputs"));
  KOPE_ASSIGN_OR_RETURN(common.attributes, ReadAttributes(family));
  KOPE_ASSIGN_OR_RETURN(std::vector<std::string> task_names, family.Strings("tasks", true));
  std::vector<fs::path> tasks;
  for (const std::string& t : task_names) {
    KOPE_ASSIGN_OR_RETURN(fs::path p, InsidePack(dir, t, family, "tasks"));
    tasks.push_back(p);
  }
  if (tasks.empty()) return family.Error("tasks", "needs at least one task folder");
  return ReadKernels(dir, family, common, tasks, names, pack);
}

}  // namespace

Result<PackSource> LoadPackSource(const fs::path& dir_in) {
  std::error_code ec;
  fs::path dir = fs::weakly_canonical(fs::absolute(dir_in), ec);
  const fs::path file = dir / "pack.toml";
  const std::string where = (dir_in / "pack.toml").string();
  if (!fs::is_regular_file(file, ec)) return Status::NotFound(where + ": no such file");
  toml::table root;
  try {
    root = toml::parse_file(file.string());
  } catch (const toml::parse_error& e) {
    return Status::InvalidArgument(where + ": TOML syntax error: " + std::string(e.description()));
  }
  Table top(root, "");
  PackSource pack;
  pack.dir = dir;
  Status status = [&]() -> Status {
    KOPE_RETURN_IF_ERROR(top.CheckKeys({"name", "description", "families"}));
    KOPE_ASSIGN_OR_RETURN(pack.name, top.Str("name"));
    KOPE_ASSIGN_OR_RETURN(pack.description, top.Str("description", false));
    const toml::node* families = top.Get("families");
    if (families == nullptr || !families->is_array_of_tables()) {
      return top.Error("families", "expected at least one [[families]] table");
    }
    std::set<std::string> names;
    size_t index = 0;
    for (const toml::node& f : *families->as_array()) {
      Table family(*f.as_table(), "families[" + std::to_string(index++) + "]");
      KOPE_RETURN_IF_ERROR(ReadFamily(dir, family, names, pack));
    }
    return Status::Ok();
  }();
  if (!status.ok()) return Status::InvalidArgument(where + ": " + status.message());
  return pack;
}

namespace {

json RolesJson(const std::vector<RoleSpec>& roles) {
  json out = json::array();
  for (const RoleSpec& r : roles) {
    out.push_back({{"role", r.role}, {"shape", r.shape}, {"dtypes", r.dtypes}});
  }
  return out;
}

Result<std::vector<RoleSpec>> ParseRoles(const json& j, const char* key) {
  std::vector<RoleSpec> out;
  auto it = j.find(key);
  if (it == j.end() || !it->is_array()) {
    return Status::InvalidArgument(std::string("pack kernel: field '") + key +
                                   "' must be a list of roles");
  }
  for (const json& r : *it) {
    RoleSpec spec;
    try {
      spec.role = r.at("role").get<std::string>();
      spec.shape = r.at("shape").get<std::vector<std::string>>();
      spec.dtypes = r.value("dtypes", std::vector<std::string>());
    } catch (const json::exception&) {
      return Status::InvalidArgument(std::string("pack kernel: a role in '") + key +
                                     "' lacks role, shape or dtypes");
    }
    out.push_back(std::move(spec));
  }
  return out;
}

}  // namespace

std::string KernelSpecJson(const KernelSpec& s) {
  json j = {{"pack", s.pack},
            {"name", s.name},
            {"op", s.op},
            {"family", s.family},
            {"language", s.language},
            {"hardware", s.hardware},
            {"verified", s.verified},
            {"inputs", RolesJson(s.inputs)},
            {"outputs", RolesJson(s.outputs)},
            {"attributes", s.attributes}};
  return j.dump();
}

Result<KernelSpec> ParseKernelSpec(std::string_view text) {
  json j = json::parse(text, nullptr, false);
  if (!j.is_object()) return Status::InvalidArgument("pack kernel: not a JSON object");
  KernelSpec s;
  try {
    s.pack = j.at("pack").get<std::string>();
    s.name = j.at("name").get<std::string>();
    s.op = j.at("op").get<std::string>();
    s.family = j.at("family").get<std::string>();
    s.language = j.at("language").get<std::string>();
    s.hardware = j.value("hardware", std::string());
    s.verified = j.value("verified", true);
    s.attributes = j.value("attributes", std::map<std::string, double>());
  } catch (const json::exception& e) {
    return Status::InvalidArgument(std::string("pack kernel: ") + e.what());
  }
  KOPE_ASSIGN_OR_RETURN(s.inputs, ParseRoles(j, "inputs"));
  KOPE_ASSIGN_OR_RETURN(s.outputs, ParseRoles(j, "outputs"));
  return s;
}

Result<KernelSpec> KernelSpecOfRunConfig(std::string_view config_json) {
  json j = json::parse(config_json, nullptr, false);
  if (!j.is_object() || !j.contains("pack") || !j["pack"].is_object()) {
    return Status::NotFound("not a pack run");
  }
  return ParseKernelSpec(j["pack"].dump());
}

}  // namespace kope::pack
