#include "kope/bench_suite/suite_file.h"

#include <toml++/toml.h>

#include <cstdlib>
#include <set>

#include "kope/bench_suite/suite.h"

namespace kope::bench_suite {
namespace {

namespace fs = std::filesystem;

constexpr std::string_view kKernelBenchPrefix = "kernelbench:";

Status Invalid(const fs::path& file, const std::string& what) {
  return Status::InvalidArgument(file.string() + ": " + what);
}

Result<fs::path> KernelBenchRoot(const fs::path& file, const fs::path& given) {
  if (!given.empty()) return given;
  const char* env = std::getenv("KOPE_KERNELBENCH");
  if (env != nullptr && *env != '\0') return fs::path(env);
  return Invalid(file,
                 "names KernelBench problems: give the KernelBench folder (--kernelbench DIR or "
                 "$KOPE_KERNELBENCH)");
}

Result<fs::path> ResolveEntry(const fs::path& file, const std::string& entry,
                              const fs::path& kernelbench_root) {
  fs::path path;
  if (entry.rfind(kKernelBenchPrefix, 0) == 0) {
    KOPE_ASSIGN_OR_RETURN(fs::path root, KernelBenchRoot(file, kernelbench_root));
    path = root / entry.substr(kKernelBenchPrefix.size());
  } else {
    path = fs::path(entry).is_absolute() ? fs::path(entry) : file.parent_path() / entry;
  }
  std::error_code ec;
  if (!fs::exists(path, ec)) return Invalid(file, "tasks: '" + entry + "' does not exist");
  return fs::weakly_canonical(path, ec);
}

}  // namespace

Result<SuiteFile> LoadSuiteFile(const fs::path& file, const fs::path& kernelbench_root) {
  toml::table root;
  try {
    root = toml::parse_file(file.string());
  } catch (const toml::parse_error& e) {
    return Invalid(file, std::string(e.description()));
  }
  for (const auto& [key, value] : root) {
    (void)value;
    if (key != "name" && key != "description" && key != "tasks") {
      return Invalid(file, "unknown key '" + std::string(key.str()) + "'");
    }
  }
  SuiteFile suite;
  suite.name = root["name"].value_or(std::string());
  if (suite.name.empty()) return Invalid(file, "name: required");
  suite.description = root["description"].value_or(std::string());
  const toml::array* tasks = root["tasks"].as_array();
  if (tasks == nullptr || tasks->empty()) return Invalid(file, "tasks: a non-empty list needed");
  std::set<fs::path> seen;
  for (const toml::node& node : *tasks) {
    std::optional<std::string> entry = node.value<std::string>();
    if (!entry) return Invalid(file, "tasks: every entry is a string");
    KOPE_ASSIGN_OR_RETURN(fs::path path, ResolveEntry(file, *entry, kernelbench_root));
    if (!seen.insert(path).second) return Invalid(file, "tasks: '" + *entry + "' named twice");
    suite.tasks.push_back(path);
  }
  return suite;
}

Result<SuiteFile> ResolveSuite(const fs::path& suite, const fs::path& kernelbench_root) {
  std::error_code ec;
  if (fs::is_regular_file(suite, ec) && suite.extension() == ".toml" &&
      suite.filename() != "task.toml") {
    return LoadSuiteFile(suite, kernelbench_root);
  }
  SuiteFile folder;
  folder.tasks = FindSuiteTasks(suite);
  if (folder.tasks.empty()) return Status::NotFound("no task in " + suite.string());
  folder.name = fs::weakly_canonical(suite, ec).filename().string();
  if (folder.name.empty()) folder.name = "suite";
  return folder;
}

}  // namespace kope::bench_suite
