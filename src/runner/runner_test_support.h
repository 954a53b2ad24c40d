// Shared by the runner tests: temporary folders, test kernels compiled with the
// system compiler, arena layouts and looking at processes through /proc.
#ifndef KOPE_SRC_RUNNER_RUNNER_TEST_SUPPORT_H_
#define KOPE_SRC_RUNNER_RUNNER_TEST_SUPPORT_H_

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "kope/base/subprocess.h"
#include "kope/runner/arena.h"
#include "kope/runner/runner.h"
#include "kope/runner/sandbox.h"
#include "testing/test_paths.h"

namespace kope::testing {

inline std::filesystem::path MakeTempDir(const std::string& prefix) {
  std::string templ = (std::filesystem::temp_directory_path() / (prefix + "-XXXXXX")).string();
  if (mkdtemp(templ.data()) == nullptr) return {};
  return templ;
}

// Where compiled test kernels go; removed when the tests end.
inline const std::filesystem::path& KernelDir() {
  static const std::filesystem::path dir = MakeTempDir("kope-runner-kernels");
  return dir;
}

class KernelDirCleanup : public ::testing::Environment {
 public:
  void TearDown() override {
    std::error_code ec;
    std::filesystem::remove_all(KernelDir(), ec);
  }
};
inline ::testing::Environment* const kKernelDirCleanup =
    ::testing::AddGlobalTestEnvironment(new KernelDirCleanup);

// Compiles testdata/<name>.cc into a shared object once per process and
// define set; an empty path (and a test failure) when the compiler fails.
inline std::filesystem::path CompileKernel(const std::string& name,
                                           const std::vector<std::string>& defines = {}) {
  static std::mutex mu;
  static std::map<std::string, std::filesystem::path> built;
  const std::filesystem::path& dir = KernelDir();
  std::lock_guard<std::mutex> lock(mu);
  std::string key = name;
  for (const auto& d : defines) key += "|" + d;
  if (auto it = built.find(key); it != built.end()) return it->second;
  const std::filesystem::path out = dir / (name + "-" + std::to_string(built.size()) + ".so");
  std::vector<std::string> argv = {"g++",
                                   "-std=c++20",
                                   "-O2",
                                   "-fopenmp",
                                   "-fPIC",
                                   "-shared",
                                   "-I" + kope::testing::SourceDir() + "/include"};
  for (const auto& d : defines) argv.push_back("-D" + d);
  argv.insert(argv.end(), {kope::testing::SourceDir() + "/src/runner/testdata/" + name + ".cc",
                           "-o", out.string()});
  auto r = RunProcess(argv);
  if (!r.ok() || !r->ok()) {
    ADD_FAILURE() << "compiling " << name << ": " << (r.ok() ? r->output : r.status().ToString());
    return {};
  }
  built[key] = out;
  return out;
}

inline TensorSlot Slot(DType dtype, std::vector<int64_t> shape, uint64_t offset,
                       std::vector<int64_t> strides = {}) {
  TensorSlot s;
  s.dtype = dtype;
  s.shape = std::move(shape);
  s.strides = std::move(strides);
  s.offset = offset;
  return s;
}

// The call of testdata's "affine" kernel: x (10 floats) at 0, a and b at 64, y at 128 with
// stride 2 (y[i] = a * x[i] + b; the stride's gaps stay as they were).
inline CallSpec AffineCall() {
  CallSpec call;
  call.inputs = {Slot(KOPE_F32, {10}, 0), Slot(KOPE_F32, {2}, 64)};
  call.outputs = {Slot(KOPE_F32, {10}, 128, {2})};
  return call;
}

// The state letter of /proc/<pid>/stat, or 0 when there is no such process.
inline char ProcessState(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(stat, line)) return 0;
  size_t paren = line.rfind(')');
  return paren == std::string::npos || paren + 2 >= line.size() ? 0 : line[paren + 2];
}

// Gone, or a zombie that nobody here will reap (reparented to init).
inline bool ProcessGone(pid_t pid) {
  char state = ProcessState(pid);
  return state == 0 || state == 'Z' || state == 'X';
}

// Waits (up to `seconds`) for the process to die; death is asynchronous.
inline bool WaitUntilGone(pid_t pid, double seconds = 10) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (!ProcessGone(pid)) {
    if (std::chrono::steady_clock::now() > until) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return true;
}

// Living (non-zombie) processes whose parent chain reaches `root`.
inline std::vector<pid_t> LivingDescendants(pid_t root) {
  std::map<pid_t, pid_t> parent;
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    const std::string name = entry.path().filename().string();
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream stat(entry.path() / "stat");
    std::string line;
    if (!std::getline(stat, line)) continue;
    size_t paren = line.rfind(')');
    if (paren == std::string::npos) continue;
    char state = 0;
    long ppid = 0;
    std::istringstream rest(line.substr(paren + 2));
    rest >> state >> ppid;
    if (state != 'Z' && state != 'X') parent[std::stoi(name)] = static_cast<pid_t>(ppid);
  }
  std::vector<pid_t> out;
  for (const auto& [pid, ppid] : parent) {
    pid_t p = ppid;
    for (int depth = 0; depth < 64 && p > 1; ++depth) {
      if (p == root) {
        out.push_back(pid);
        break;
      }
      auto it = parent.find(p);
      if (it == parent.end()) break;
      p = it->second;
    }
  }
  return out;
}

// A runner test: every test runs with bubblewrap (true) and without (false).
class RunnerFixture : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override {
    if (GetParam() && !BubblewrapAvailable()) GTEST_SKIP() << "bubblewrap does not work here";
    dir_ = MakeTempDir("kope-runner-test");
    ASSERT_FALSE(dir_.empty());
  }
  void TearDown() override {
    std::error_code ec;
    if (!dir_.empty()) std::filesystem::remove_all(dir_, ec);
  }

  RunnerOptions Options() {
    RunnerOptions options;
    options.runner_exe = kope::testing::BinaryDir() + "/kope-runner";
    options.sandbox.scratch_dir = dir_ / ("scratch" + std::to_string(++scratch_count_));
    std::filesystem::create_directory(options.sandbox.scratch_dir);
    options.sandbox.use_bubblewrap = GetParam();
    options.sandbox.limits.max_address_space_bytes = 4ull << 30;
    return options;
  }

  std::unique_ptr<Runner> StartRunner(const RunnerOptions& options) {
    auto runner = Runner::Start(options);
    EXPECT_TRUE(runner.ok()) << runner.status().ToString();
    return runner.ok() ? std::move(runner).value() : nullptr;
  }
  std::unique_ptr<Runner> StartRunner() { return StartRunner(Options()); }

  // Starts a runner, loads `kernel` and maps `arena`; null (and a failure) on error.
  std::unique_ptr<Runner> Prepared(const std::filesystem::path& kernel, const SharedArena& arena,
                                   const RunnerOptions& options) {
    if (kernel.empty()) return nullptr;
    std::unique_ptr<Runner> runner = StartRunner(options);
    if (runner == nullptr) return nullptr;
    auto loaded = runner->Load(kernel, 30);
    EXPECT_TRUE(loaded.ok() && loaded->ok())
        << (loaded.ok() ? loaded->detail : loaded.status().ToString());
    auto mapped = runner->MapArena(arena, 30);
    EXPECT_TRUE(mapped.ok() && mapped->ok());
    if (!loaded.ok() || !loaded->ok() || !mapped.ok() || !mapped->ok()) return nullptr;
    return runner;
  }
  std::unique_ptr<Runner> Prepared(const std::filesystem::path& kernel, const SharedArena& arena) {
    return Prepared(kernel, arena, Options());
  }

  static std::unique_ptr<SharedArena> Arena(size_t bytes) {
    auto arena = SharedArena::Create(bytes);
    EXPECT_TRUE(arena.ok());
    return arena.ok() ? std::move(arena).value() : nullptr;
  }

  std::filesystem::path dir_;
  int scratch_count_ = 0;
};

inline std::string ModeName(const ::testing::TestParamInfo<bool>& info) {
  return info.param ? "Bubblewrap" : "Direct";
}

}  // namespace kope::testing

#endif  // KOPE_SRC_RUNNER_RUNNER_TEST_SUPPORT_H_
