// A deployment workload: the model a user serves, how they run it, and the traffic it gets.
//
// Users write it as workload.toml (docs/commands/deploy.md has every field); `kope deploy`
// reads it with LoadWorkload, which applies every rule of what a valid workload is: exactly one
// model source (a transformers architecture with a config and random weights, a local
// checkpoint folder, or a user script), known enum values, positive integers, positive request
// weights (normalized to sum 1), no unknown keys, and paths resolved against the workload file's
// folder and checked to exist. The Python side (python/kope_deploy) trusts the normalized form
// that WorkloadToJson writes (workload.json) and checks nothing again.
//
// Failure: LoadWorkload returns InvalidArgument whose message names the file and the field,
// e.g. "workload.toml: requests[1].batch: must be a positive integer (got 0)"; NotFound when the
// file itself is missing. It returns a workload only when the whole file is valid.
// Values are plain and copyable; the functions are pure apart from reading the file system.
#ifndef KOPE_DEPLOY_WORKLOAD_H_
#define KOPE_DEPLOY_WORKLOAD_H_

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kope/base/status.h"

namespace kope::deploy {

// Where the model comes from.
enum class ModelSource {
  kConfig,      // a transformers causal-LM class built from a config, random weights from a seed
  kCheckpoint,  // a local Hugging Face checkpoint folder (config.json inside)
  kScript,      // a user script with build() and run(model, request)
};
std::string_view ModelSourceName(ModelSource source);  // "config", "checkpoint", "script"

struct WorkloadModel {
  ModelSource source = ModelSource::kConfig;
  std::string architecture;        // kConfig: e.g. "LlamaForCausalLM"
  std::string config_json = "{}";  // kConfig: the config's fields, a JSON object
  int64_t seed = 0;                // kConfig and kScript
  std::filesystem::path path;      // kCheckpoint and kScript: absolute
};

struct WorkloadRun {
  std::string dtype = "bf16";      // bf16 | fp16 | fp32
  std::string device = "cuda";     // cuda | cpu
  std::string attention = "sdpa";  // eager | sdpa
  std::string mode = "generate";   // generate | static-compile | cuda-graphs
};

// One entry of the request mix.
struct RequestEntry {
  int64_t batch = 1;
  int64_t prompt = 0;  // prompt length in tokens
  int64_t decode = 0;  // generated tokens
  double weight = 1;   // share of traffic; normalized by LoadWorkload to sum 1
};

// The gate a kernel must pass inside the model (used when kernels are validated).
struct AccuracyGate {
  std::vector<std::string> prompts;  // given prompts; empty: random ones
  int64_t random_prompts = 8;        // 0 when prompts are given
  double min_token_match = 0.99;     // share of greedy tokens equal to the unpatched model's
  std::optional<double> max_logit_diff;
};

struct Workload {
  std::string name;            // default: the file's stem
  std::filesystem::path file;  // the workload file, absolute
  WorkloadModel model;
  WorkloadRun run;
  std::vector<RequestEntry> requests;  // at least one
  AccuracyGate accuracy;
  int64_t extract_top = 8;  // how many opportunities become task folders
};

// Reads and validates a workload file; see the header comment.
Result<Workload> LoadWorkload(const std::filesystem::path& path);

// The same from text; `file` is the workload file's path (its folder resolves relative paths,
// its name starts every error message).
Result<Workload> ParseWorkload(std::string_view text, const std::filesystem::path& file);

// The normalized workload as workload.json (schema 1), indented, ending with a newline.
std::string WorkloadToJson(const Workload& workload);

}  // namespace kope::deploy

#endif  // KOPE_DEPLOY_WORKLOAD_H_
