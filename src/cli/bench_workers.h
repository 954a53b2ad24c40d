// `kope bench DIR --workers URL`: a suite's candidates evaluated by `kope worker` processes
// instead of by this process: one eval job per task and candidate file, enqueued in the shared
// store's queue, collected as the workers complete them, with progress (jobs queued / running /
// done, and per worker) on stderr and a table of the verdicts on stdout.
#ifndef KOPE_SRC_CLI_BENCH_WORKERS_H_
#define KOPE_SRC_CLI_BENCH_WORKERS_H_

#include <ostream>
#include <string>
#include <vector>

#include "episode_flags.h"

namespace kope::cli {

struct BenchWorkersArgs {
  std::string url;                      // the shared store and queue
  std::string dir;                      // the suite's folder
  std::string name;                     // the suite's name ("": the folder's name)
  std::vector<std::string> candidates;  // candidate file names in each task folder
  int trials = 5;
  bool no_bubblewrap = false;
  bool json = false;
  bool quiet = false;
  double wait_seconds = 0;  // 0: until every job has ended
};

// Returns the process exit code: 0 when every job completed, 1 when one failed or the wait ran
// out, 2 for bad input (no task with a candidate).
int RunBenchOnWorkers(const BenchWorkersArgs& args);

// `kope bench DIR --workers URL --episodes-on-workers`: each task's whole episode run by a
// worker (an episode job: episode_job.h), recorded in the shared store under the suite's label,
// and the suite's report (report.json, report.csv, speedup.svg in `out`) made from the runs the
// store holds. For a cluster whose GPUs are on the workers only: nothing is evaluated here.
struct SuiteOnWorkersArgs {
  std::string url;   // the shared store and queue
  std::string dir;   // the suite's folder
  std::string name;  // "": the folder's name
  std::string out;   // "": kope-bench-NAME
  EpisodeFlags flags;
};

// Exit code: 0 when every task's episode ran (whatever its verdicts), 1 when one failed or the
// store cannot be read, 2 for bad input (no task).
int RunSuiteOnWorkers(const SuiteOnWorkersArgs& args);

}  // namespace kope::cli

#endif  // KOPE_SRC_CLI_BENCH_WORKERS_H_
