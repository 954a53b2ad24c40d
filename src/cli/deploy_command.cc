// `kope deploy profile WORKLOAD --out DIR [--top N] [-q] [--store S]`: profiles an inference
// workload by phase (the Python side, python/kope_deploy), prints the summary, and records the
// extracted task folders in the experience graph; `kope deploy run` (deploy_loop.cc) is the
// closed loop. docs/commands/deploy.md.
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "commands.h"
#include "deploy_loop.h"
#include "deploy_steps.h"
#include "kope/deploy/profile.h"
#include "kope/deploy/profiler.h"
#include "kope/deploy/recording.h"
#include "kope/deploy/workload.h"
#include "kope/memory/store_location.h"

namespace kope::cli {
namespace {

namespace fs = std::filesystem;

constexpr const char* kUsage =
    "usage: kope deploy WORKLOAD.toml --out DIR [options]    (the closed loop: kope deploy run)\n"
    "       kope deploy profile WORKLOAD.toml --out DIR [--top N] [-q] [--store PATH] "
    "[--dry-run]";

struct DeployArgs {
  std::string workload;
  std::string out;
  int top = 0;  // 0: the workload's extract.top
  bool quiet = false;
  bool dry_run = false;  // the workload checked and written as workload.json, nothing run
  std::string store;
  std::vector<std::string> extras;  // words after `kope deploy` that are no subcommand
};

int Fail(const std::string& message, int code) {
  std::cerr << "kope deploy profile: " << message << "\n";
  return code;
}

int RunProfile(const DeployArgs& args) {
  Result<deploy::Workload> workload = deploy::LoadWorkload(args.workload);
  if (!workload.ok()) return Fail(workload.status().message(), 2);
  if (args.top > 0) workload->extract_top = args.top;
  Result<std::string> location = memory::ResolveStoreLocation(args.store);
  if (!location.ok()) return Fail(location.status().message(), 2);
  const fs::path out = fs::absolute(args.out).lexically_normal();
  std::error_code ec;
  fs::create_directories(out, ec);
  if (ec) return Fail("cannot create " + out.string() + ": " + ec.message(), 1);
  const std::string workload_json = deploy::WorkloadToJson(*workload);
  if (Status s = WriteText(out / "workload.json", workload_json); !s.ok()) {
    return Fail(s.message(), 1);
  }
  if (args.dry_run) {
    std::cout << "checked " << args.workload << ": " << (out / "workload.json").string() << "\n";
    return 0;
  }
  fs::path profile_path;
  if (int code = RunProfileStep(out, "kope deploy profile", args.quiet, &profile_path); code != 0) {
    return code;
  }
  Result<deploy::Profile> profile = deploy::ReadProfile(profile_path);
  if (!profile.ok()) return Fail(profile.status().message(), 1);
  Result<std::unique_ptr<memory::GraphStore>> store = memory::OpenStore(*location);
  if (!store.ok()) return Fail(store.status().message(), 1);
  Result<deploy::RecordedWorkload> recorded =
      deploy::RecordWorkloadTasks(**store, *workload, workload_json, *profile, out);
  if (!recorded.ok()) return Fail(recorded.status().message(), 1);
  std::cout << deploy::ProfileSummary(*profile,
                                      {args.out, static_cast<size_t>(workload->extract_top)});
  std::cout << "recorded " << recorded->task_ids.size() << " task"
            << (recorded->task_ids.size() == 1 ? "" : "s") << " from workload w"
            << recorded->workload_id << " in " << *location << "\n";
  return 0;
}

// `kope deploy` without a subcommand, or with an unknown one.
int Usage(const DeployArgs& args) {
  if (args.extras.empty()) {
    std::cerr << "kope deploy: a workload or a subcommand is required (run, profile)\n"
              << kUsage << "\n";
  } else {
    std::cerr << "kope deploy: unknown subcommand '" << args.extras.front()
              << "' (expected: run, profile, or a workload file)\n"
              << kUsage << "\n";
  }
  return 2;
}

}  // namespace

void RegisterDeployCommand(CLI::App& app, int* exit_code) {
  CLI::App* deploy = app.add_subcommand(
      "deploy",
      "The deployment loop: profile a model's inference workload, optimize its tasks, validate "
      "them in the model");
  auto args = std::make_shared<DeployArgs>();
  deploy->allow_extras();
  CLI::App* profile = deploy->add_subcommand(
      "profile",
      "Profile a workload by phase, rank opportunities, write task folders and record them");
  profile->add_option("workload", args->workload, "The workload file (workload.toml)")->required();
  profile->add_option("--out", args->out, "Folder for workload.json, profile.json, tasks/")
      ->required();
  profile
      ->add_option("--top", args->top,
                   "Opportunities to extract as tasks (default: the "
                   "workload's extract.top, else 8)")
      ->check(CLI::Range(1, 1000000));
  profile->add_flag("-q,--quiet", args->quiet, "No progress display");
  profile->add_flag("--dry-run", args->dry_run,
                    "Check the workload and write DIR/workload.json (defaults filled in) only");
  profile->add_option("--store", args->store,
                      "Experience store (default: $KOPE_STORE, else the user's data folder)");
  profile->callback([args, exit_code] { *exit_code = RunProfile(*args); });
  CLI::App* run = RegisterDeployRun(*deploy, exit_code);
  deploy->callback([deploy, profile, run, args, exit_code] {
    if (profile->parsed() || run->parsed()) return;
    args->extras = deploy->remaining();
    *exit_code = Usage(*args);
  });
}

}  // namespace kope::cli
