// task.toml: the whole of LoadTask (syntax, fields, cross-field checks) on a folder holding the
// input as its task.toml beside empty kernel sources, then every size set's shapes, tolerances
// and roofline counts, as the evaluator resolves them.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "kope/task/task.h"

namespace {

namespace fs = std::filesystem;

fs::path& FolderPath() {
  static fs::path dir;
  return dir;
}

void RemoveFolder() {
  std::error_code ec;
  fs::remove_all(FolderPath(), ec);
}

const fs::path& Folder() {
  static const fs::path dir = [] {
    fs::path d = fs::temp_directory_path() / ("kope-fuzz-task-" + std::to_string(getpid()));
    fs::create_directories(d);
    for (const char* name : {"baseline.cc", "baseline.cu", "reference.cc", "reference.py",
                             "optimized.cc", "tunable.cc", "problem.py"}) {
      std::ofstream(d / name) << "\n";
    }
    FolderPath() = d;
    std::atexit(RemoveFolder);
    return d;
  }();
  return dir;
}

void Resolve(const kope::Task& task) {
  for (const kope::SizeSet& set : kope::AllSizeSets(task)) {
    for (const auto* specs : {&task.inputs, &task.outputs}) {
      for (const kope::TensorSpec& spec : *specs) {
        (void)kope::ResolveShape(spec, set);
        (void)kope::ResolveTolerance(task.tolerance, spec.dtype, set);
      }
    }
    for (const auto* e : {&task.bytes, &task.flops}) {
      if (*e) (void)(*e)->Evaluate(set.sizes);
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  {
    std::ofstream out(Folder() / "task.toml", std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  }
  kope::Result<kope::Task> task = kope::LoadTask(Folder());
  if (task.ok()) Resolve(*task);
  return 0;
}
