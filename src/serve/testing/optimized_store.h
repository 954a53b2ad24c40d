// Test support: an experience store filled by a real `kope optimize` run (the offline proposer
// on the bundled rmsnorm example, a few attempts), made once per test binary.
#ifndef KOPE_SRC_SERVE_TESTING_OPTIMIZED_STORE_H_
#define KOPE_SRC_SERVE_TESTING_OPTIMIZED_STORE_H_

#include <filesystem>
#include <string>

namespace kope::serve::testing {

struct OptimizedStore {
  std::filesystem::path dir;    // a scratch folder, removed when the test binary exits
  std::filesystem::path store;  // the store in it
  int64_t run = 0;              // the optimize run's id
  std::string error;            // why the store could not be made ("" when it was)
};

// Runs the optimization on first use; later calls return the same store.
const OptimizedStore& SharedOptimizedStore();

// A fresh scratch folder under the system's temporary folder.
std::filesystem::path MakeScratchDir(const std::string& prefix);

}  // namespace kope::serve::testing

#endif  // KOPE_SRC_SERVE_TESTING_OPTIMIZED_STORE_H_
