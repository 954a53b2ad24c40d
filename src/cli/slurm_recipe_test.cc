// The Slurm recipe users copy (deploy/slurm/kope-workers.sbatch), run on a single-node Slurm that
// the test starts itself (munged, slurmctld and slurmd with a configuration in a temp folder, two
// fake GPUs): its workers drain a queue, each job done once. Skips where Debian's slurm-wlm and
// munge are not installed, where the test does not run as root (slurmd needs it), or where no
// PostgreSQL cluster can be started.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <random>
#include <set>
#include <thread>

#include "../memory/testing/test_stores.h"
#include "../testing/test_paths.h"
#include "kope/base/subprocess.h"
#include "kope/queue/job_queue.h"

namespace kope {
namespace {

namespace fs = std::filesystem;

template <typename T>
T ValueOrDie(Result<T> result) {
  EXPECT_TRUE(result.ok()) << result.status().ToString();
  if (!result.ok()) std::abort();
  return std::move(result).value();
}

std::string ShortHostname() {
  char host[256] = {};
  ::gethostname(host, sizeof(host) - 1);
  std::string name = host;
  return name.substr(0, name.find('.'));
}

void WriteFile(const fs::path& path, const std::string& text) {
  std::ofstream(path, std::ios::trunc) << text;
}

// munged, slurmctld and slurmd in a temp folder; stopped (and the folder removed) at destruction.
class SingleNodeSlurm {
 public:
  // "" when it runs, else why not.
  std::string Start() {
    for (const char* tool : {"/usr/sbin/munged", "/usr/sbin/slurmctld", "/usr/sbin/slurmd",
                             "/usr/bin/sbatch", "/usr/bin/sinfo"}) {
      if (!fs::exists(tool))
        return std::string("Slurm test skipped: no ") + tool + " (install slurm-wlm and munge)";
    }
    if (::geteuid() != 0) return "Slurm test skipped: slurmd needs root";
    std::string pattern = (fs::temp_directory_path() / "kope-slurm-XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr) return "cannot create a folder";
    dir_ = pattern;
    fs::create_directories(dir_ / "state");
    fs::create_directories(dir_ / "spool");
    std::string key(1024, '\0');
    std::random_device random;
    for (char& c : key) c = static_cast<char>(random());
    WriteFile(dir_ / "munge.key", key);
    ::chmod((dir_ / "munge.key").c_str(), 0400);
    const std::string d = dir_.string();
    pids_.push_back(ValueOrDie(
        SpawnProcess({"/usr/sbin/munged", "-F", "-f", "--key-file=" + d + "/munge.key",
                      "--socket=" + d + "/munge.socket", "--pid-file=" + d + "/munged.pid",
                      "--log-file=" + d + "/munged.log", "--seed-file=" + d + "/munge.seed"},
                     {})));
    WriteConfig();
    const std::vector<std::string> env = {"SLURM_CONF=" + Conf(), "PATH=/usr/sbin:/usr/bin:/bin"};
    for (const char* daemon : {"/usr/sbin/slurmctld", "/usr/sbin/slurmd"}) {
      SpawnOptions options;
      options.env = env;
      options.working_dir = dir_;
      pids_.push_back(ValueOrDie(SpawnProcess({daemon, "-D", "-f", Conf()}, options)));
    }
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (std::chrono::steady_clock::now() < deadline) {
      auto state = RunProcess({"/usr/bin/sinfo", "-h", "-o", "%t"}, Options(10));
      if (state.ok() && state->output.find("idle") != std::string::npos) return "";
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
    return "the single-node Slurm did not come up (see " + d + "/slurmctld.log)";
  }

  ~SingleNodeSlurm() {
    for (auto it = pids_.rbegin(); it != pids_.rend(); ++it) {
      ::kill(*it, SIGTERM);
      int status = 0;
      ::waitpid(*it, &status, 0);
    }
    std::error_code ec;
    if (!dir_.empty()) fs::remove_all(dir_, ec);
  }

  std::string Conf() const { return (dir_ / "slurm.conf").string(); }
  const fs::path& dir() const { return dir_; }
  ProcessOptions Options(double timeout) const {
    ProcessOptions options;
    options.timeout_seconds = timeout;
    options.extra_env = {"SLURM_CONF=" + Conf()};
    return options;
  }

 private:
  void WriteConfig() {
    const std::string d = dir_.string(), host = ShortHostname();
    const int port = 20000 + static_cast<int>(::getpid() % 20000);
    WriteFile(dir_ / "slurm.conf",
              "ClusterName=kopetest\nSlurmctldHost=" + host + "\nSlurmctldPort=" +
                  std::to_string(port) + "\nSlurmdPort=" + std::to_string(port + 1) +
                  "\nSlurmUser=root\nSlurmdUser=root\nAuthType=auth/munge\n"
                  "AuthInfo=socket=" +
                  d +
                  "/munge.socket\nCredType=cred/munge\n"
                  "StateSaveLocation=" +
                  d + "/state\nSlurmdSpoolDir=" + d +
                  "/spool\n"
                  "SlurmctldPidFile=" +
                  d + "/slurmctld.pid\nSlurmdPidFile=" + d +
                  "/slurmd.pid\n"
                  "SlurmctldLogFile=" +
                  d + "/slurmctld.log\nSlurmdLogFile=" + d +
                  "/slurmd.log\n"
                  "ProctrackType=proctrack/linuxproc\nTaskPlugin=task/none\n"
                  "SwitchType=switch/none\nMpiDefault=none\nSchedulerType=sched/builtin\n"
                  "SelectType=select/cons_tres\nSelectTypeParameters=CR_Core\n"
                  "ReturnToService=2\nJobAcctGatherType=jobacct_gather/none\n"
                  "AccountingStorageType=accounting_storage/none\nGresTypes=gpu\n"
                  "NodeName=" +
                  host +
                  " NodeAddr=127.0.0.1 CPUs=2 RealMemory=1000 Gres=gpu:2 "
                  "State=UNKNOWN\nPartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE "
                  "State=UP\n");
    // Two fake GPUs, so that the recipe's --gpus-per-task is honoured as on a GPU node.
    WriteFile(dir_ / "gres.conf", "Name=gpu File=/dev/null\nName=gpu File=/dev/zero\n");
  }

  fs::path dir_;
  std::vector<int> pids_;
};

TEST(SlurmRecipeTest, TheBatchScriptsWorkersDrainTheQueue) {
  memory::testing::TestStoreLocation where =
      memory::testing::NewStoreLocation(memory::testing::StoreKind::kPostgres, fs::path("/"));
  if (where.location.empty()) GTEST_SKIP() << where.skip_reason;
  SingleNodeSlurm slurm;
  const std::string why = slurm.Start();
  if (!why.empty()) GTEST_SKIP() << why;

  std::unique_ptr<queue::JobQueue> jobs = ValueOrDie(queue::OpenJobQueue(where.location));
  constexpr int kJobs = 12;
  ValueOrDie(jobs->Enqueue(std::vector<queue::JobSpec>(kJobs, {"noop", "{\"ms\": 100}", "slurm"})));

  // As a user submits it, with the node's size instead of the recipe's 8 GPUs.
  ProcessOptions options = slurm.Options(180);
  options.working_dir = slurm.dir();
  options.extra_env.push_back("KOPE=" + (fs::path(testing::BinaryDir()) / "kope").string());
  options.extra_env.push_back("KOPE_STORE=" + where.location);
  options.extra_env.push_back("KOPE_BACKEND=cpu");
  options.extra_env.push_back("KOPE_IDLE_EXIT=1");
  const std::string script =
      (fs::path(testing::SourceDir()) / "deploy" / "slurm" / "kope-workers.sbatch").string();
  ProcessResult sbatch = ValueOrDie(
      RunProcess({"/usr/bin/sbatch", "--wait", "--ntasks-per-node=2", "--cpus-per-task=1",
                  "--output=" + (slurm.dir() / "job.log").string(), script},
                 options));
  std::ifstream log(slurm.dir() / "job.log");
  std::string job_log((std::istreambuf_iterator<char>(log)), std::istreambuf_iterator<char>());
  ASSERT_EQ(sbatch.exit_code, 0) << sbatch.output << job_log;

  std::set<std::string> workers;
  std::vector<queue::JobRecord> records = ValueOrDie(jobs->Jobs("slurm"));
  ASSERT_EQ(records.size(), static_cast<size_t>(kJobs));
  for (const queue::JobRecord& r : records) {
    EXPECT_EQ(r.state, queue::JobState::kDone) << job_log;
    EXPECT_EQ(r.claims, 1);
    EXPECT_EQ(r.worker.rfind("slurm-", 0), 0u) << r.worker;
    workers.insert(r.worker);
  }
  EXPECT_LE(workers.size(), 2u);  // one worker per Slurm task
}

}  // namespace
}  // namespace kope
