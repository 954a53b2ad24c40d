// Where a test binary finds the source tree (its test data, examples, headers) and the build
// folder (kope, kope-runner, helper binaries). For test binaries only: kope_add_test links the
// definitions, generated per build folder, so that the tests' own object files do not depend on
// where the checkout is (a compiler cache serves every checkout of the same sources).
#ifndef KOPE_SRC_TESTING_TEST_PATHS_H_
#define KOPE_SRC_TESTING_TEST_PATHS_H_

#include <string>

namespace kope::testing {

// The checkout's root folder, without a trailing slash.
const std::string& SourceDir();
// The build folder (build/release, build/asan), without a trailing slash.
const std::string& BinaryDir();

}  // namespace kope::testing

#endif  // KOPE_SRC_TESTING_TEST_PATHS_H_
