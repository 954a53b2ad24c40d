// Test support: an experience store filled by a real `kope optimize` run (the offline proposer
// on the bundled rmsnorm example, a few attempts), made once per test binary, and a deployment
// report to add to a store.
#ifndef KOPE_SRC_SERVE_TESTING_OPTIMIZED_STORE_H_
#define KOPE_SRC_SERVE_TESTING_OPTIMIZED_STORE_H_

#include <filesystem>
#include <string>

#include "kope/memory/graph_store.h"

namespace kope::serve::testing {

struct OptimizedStore {
  std::filesystem::path dir;    // a scratch folder, removed when the test binary exits
  std::filesystem::path store;  // the store in it
  int64_t run = 0;              // the optimize run's id
  std::string error;            // why the store could not be made ("" when it was)
};

// Runs the optimization on first use; later calls return the same store.
const OptimizedStore& SharedOptimizedStore();

// Writes a workload with one deployment report (format kope-validation-1): two candidates of
// task rmsnorm tried, `rejected` failing the gate and `accepted` accepted with its figures alone
// (bs 1 prefill and decode), then both phases' figures with it installed; returns the
// workload's id.
memory::NodeId AddDeployedWorkload(memory::GraphStore& store, memory::NodeId rejected,
                                   memory::NodeId accepted);

// A fresh scratch folder under the system's temporary folder.
std::filesystem::path MakeScratchDir(const std::string& prefix);

}  // namespace kope::serve::testing

#endif  // KOPE_SRC_SERVE_TESTING_OPTIMIZED_STORE_H_
