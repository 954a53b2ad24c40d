// A pack source folder: packs/<name>/pack.toml, the kernels it names and the tasks they are
// evaluated on (docs/PACKS.md has the format).
//
// A pack holds op families ("rmsnorm", "silu_and_mul", ...). Each family says what its kernels
// compute through their interface: the role of every input and output in the order a kernel
// receives them (`x`, `weight`, `residual`), each with a shape pattern (`["...", "d"]`: any
// leading dimensions, then one named `d`) and the dtypes it accepts, and the attributes a kernel
// needs (`eps`, with the value its own tasks use). Kernels read their sizes from the tensors and
// mark their attributes in the source (`constexpr float kEps = 1e-6f;  // kope:attr eps`), so one
// kernel serves a task of any size, input order or rank that fits the patterns (adapter.h).
//
// LoadPackSource parses and checks the manifest: unknown keys, missing fields, a source or task
// folder that does not exist, two kernels of one name; each error names pack.toml and the field.
// A loaded PackSource is a plain value; thread-safe.
#ifndef KOPE_PACK_MANIFEST_H_
#define KOPE_PACK_MANIFEST_H_

#include <filesystem>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "kope/base/status.h"

namespace kope::pack {

// One input or output of a family's kernels.
struct RoleSpec {
  std::string role;                 // "x", "weight", "residual", "y", ...
  std::vector<std::string> shape;   // "..." (first only: any leading dimensions), names, integers
  std::vector<std::string> dtypes;  // kope dtype names ("f32", "bf16"); empty: any
};

// What a kernel of a family is, as the graph keeps it (in its run's config) and transfer reads it.
struct KernelSpec {
  std::string pack;      // the pack's name
  std::string name;      // unique in the pack, e.g. "rmsnorm_avx2"
  std::string op;        // the family's name, e.g. "rmsnorm"
  std::string family;    // the task family it serves (task.toml's `family`), e.g. "norm"
  std::string language;  // "cpp" (.cc) or "cuda" (.cu), from the source's extension
  std::string hardware;  // what it was written for ("cpu avx2/avx512", "sm_90")
  bool verified = true;  // false: not yet judged on hardware it targets (the manifest says so)
  std::vector<RoleSpec> inputs;
  std::vector<RoleSpec> outputs;
  std::map<std::string, double> attributes;  // name -> the value the pack's tasks use
};

struct PackKernel {
  KernelSpec spec;
  std::filesystem::path source;              // absolute
  std::vector<std::filesystem::path> tasks;  // absolute task folders, the family's
};

struct PackSource {
  std::filesystem::path dir;  // absolute
  std::string name;
  std::string description;
  std::vector<PackKernel> kernels;  // in manifest order
};

// Reads and checks `dir/pack.toml`.
Result<PackSource> LoadPackSource(const std::filesystem::path& dir);

// The spec as the JSON object runs carry ({"pack": ...}) and its inverse; ParseKernelSpec
// gives InvalidArgument naming the field when the object is not a kernel spec.
std::string KernelSpecJson(const KernelSpec& spec);
Result<KernelSpec> ParseKernelSpec(std::string_view json);

// The kernel spec in a run's config (`{"pack": {...}}`); NotFound when the run is no pack run.
Result<KernelSpec> KernelSpecOfRunConfig(std::string_view config_json);

}  // namespace kope::pack

#endif  // KOPE_PACK_MANIFEST_H_
