// A workload's profile as the Python side writes it (DIR/profile.json, docs/PROFILE_JSON.md),
// the part of it that kope's C++ side reads: the phases with their times, the weighted shares,
// and the ranked optimization opportunities with the task folders extracted for the top ones.
//
// ReadProfile returns Corruption, naming the file and the field, when the file is not JSON or a
// field it reads is missing or of the wrong type; fields it does not read are ignored, so that
// the Python side may add more. ProfileSummary is a pure function of the profile: the terminal
// summary that `kope deploy profile` prints. Values are plain and copyable.
#ifndef KOPE_DEPLOY_PROFILE_H_
#define KOPE_DEPLOY_PROFILE_H_

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kope/base/status.h"

namespace kope::deploy {

// One request entry's prefill or decode. Decode times are per step (`steps` = decode tokens).
struct PhaseProfile {
  int64_t entry = 0;
  std::string phase;  // "prefill" | "decode"
  double weight = 0;  // the entry's share of traffic
  double wall_ms = 0;
  double gpu_busy_ms = 0;
  double idle_fraction = 0;  // of wall time, the GPU idle (host and launch overhead)
  int64_t steps = 1;
};

// Shares of the workload's time, weighted by the request mix.
struct WeightedShares {
  double prefill_share = 0;
  double decode_share = 0;
  double gpu_idle_fraction = 0;
};

struct Opportunity {
  int64_t rank = 0;  // 1 is the best
  std::string name;
  std::string grain;  // "op" | "subgraph"
  std::string module_type;
  std::vector<std::string> phases;
  double share = 0;     // phase-weighted share of the workload's time
  double headroom = 0;  // to the roofline floor
  double score = 0;
  double amdahl_ceiling = 1;  // the workload's speedup if this took no time
  double floor_ms = 0;
  std::optional<std::string> task;  // "tasks/<name>" relative to the output folder; top N only
};

struct Profile {
  int64_t schema = 1;
  std::string workload_name;  // "" when the profile does not say
  std::string device;         // environment.device; "" when absent
  std::vector<PhaseProfile> phases;
  WeightedShares weighted;
  std::vector<Opportunity> opportunities;  // best first
};

// Parses profile.json's text; `file` names it in errors.
Result<Profile> ParseProfile(std::string_view text, std::string_view file);
Result<Profile> ReadProfile(const std::filesystem::path& path);

struct SummaryOptions {
  std::filesystem::path out_dir;  // where the task folders are, as the user named it
  size_t top = 8;                 // opportunities listed
};

// The terminal summary: the phases (wall time, GPU busy, idle), the weighted shares, the top
// opportunities with score and Amdahl ceiling, and the task folders. Ends with a newline.
std::string ProfileSummary(const Profile& profile, const SummaryOptions& options);

}  // namespace kope::deploy

#endif  // KOPE_DEPLOY_PROFILE_H_
