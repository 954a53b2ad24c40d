// KernelBench-format problems through the Python bridge: each problem in
// src/torch_bridge/testdata/problems is imported once (ImportKernelBenchProblem), the generated
// task is checked, and every candidate in testdata/cases.toml, native (.cc) or ModelNew (.py),
// must get its expected verdict; the ModelNew cases again on the CUDA backend where there is a GPU
// (checked in the reference runner on the device: shared device memory, Triton's tests). Skips
// when there is no bridge (scripts/setup makes .venv).
#include "kope/torch_bridge/bridge.h"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <stdlib.h>  // mkdtemp
#include <toml++/toml.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "backend/cpu/testing/cpu_test_backend.h"
#if KOPE_TEST_CUDA
#include "kope/backend/cuda/cuda_backend.h"
#endif
#include "bridge_test_support.h"
#include "kope/agent/candidate_evaluator.h"
#include "kope/base/file.h"
#include "kope/base/hash.h"
#include "kope/eval/evaluator.h"
#include "kope/eval/runner_pool.h"
#include "testing/test_paths.h"

namespace kope {

namespace fs = std::filesystem;

namespace bridge_test {

fs::path TestData() { return fs::path(kope::testing::SourceDir()) / "src/torch_bridge/testdata"; }

// One temporary folder for the whole binary, removed when the tests end.
const fs::path& ScratchDir() {
  static const fs::path dir = [] {
    std::string pattern = (fs::temp_directory_path() / "kope-torch-bridge-test-XXXXXX").string();
    if (mkdtemp(pattern.data()) == nullptr) return fs::path();
    return fs::path(pattern);
  }();
  return dir;
}

class RemoveScratch : public ::testing::Environment {
 public:
  void TearDown() override {
    std::error_code ec;
    if (!ScratchDir().empty()) fs::remove_all(ScratchDir(), ec);
  }
};
::testing::Environment* const kRemoveScratch =
    ::testing::AddGlobalTestEnvironment(new RemoveScratch);

// Imports `problem` (testdata/problems/<problem>.py) once; with `ops` set, a copy of the import
// whose task.toml has `ops = "<ops>"` in its [torch] table.
Result<Task> ImportedTask(const std::string& problem, const std::string& ops) {
  static std::mutex mu;
  static std::map<std::string, Result<Task>> imported;
  std::lock_guard<std::mutex> lock(mu);
  const std::string key = problem + (ops.empty() ? "" : "_ops_" + ops);
  if (auto it = imported.find(key); it != imported.end()) return it->second;
  KOPE_ASSIGN_OR_RETURN(TorchBridge bridge, FindTorchBridge());
  if (ScratchDir().empty()) return Status::IoError("cannot make a temporary folder");
  const fs::path base = ScratchDir() / problem;
  if (!imported.count(problem)) {
    imported.emplace(problem, ImportKernelBenchProblem(
                                  bridge, TestData() / "problems" / (problem + ".py"), base));
  }
  const Result<Task>& plain = imported.at(problem);
  if (ops.empty() || !plain.ok()) return plain;
  const fs::path dir = ScratchDir() / key;
  fs::create_directories(dir);
  fs::copy(base, dir, fs::copy_options::recursive | fs::copy_options::overwrite_existing);
  std::string toml = ReadFileText(base / "task.toml").value_or("");
  const std::string line = "ops = \"allow\"";
  const size_t at = toml.find(line);
  if (at == std::string::npos) {
    return Status::InvalidArgument((base / "task.toml").string() + ": no line " + line);
  }
  toml.replace(at, line.size(), "ops = \"" + ops + "\"");
  std::ofstream(dir / "task.toml", std::ios::binary | std::ios::trunc) << toml;
  return imported.emplace(key, LoadTask(dir)).first->second;
}

}  // namespace bridge_test

namespace {

using bridge_test::ImportedTask;
using bridge_test::ScratchDir;
using bridge_test::TestData;

struct Case {
  std::string name;
  std::string problem;
  fs::path candidate;
  std::string ops;  // empty: the imported task as is
  std::string expected;
  std::string message;     // a part of the outcome's message or runtime detail; may be empty
  std::string flag;        // a flag the outcome must carry; may be empty
  double max_speedup = 0;  // a bound on a valid outcome's speedup over eager; 0: none
  // Where set, a valid outcome also passes, with this bound as max_speedup: a timer cheat too
  // small for a busy machine's clock to catch keeps only the speedup that clock allows.
  double or_valid_below = 0;
  bool slow = false;      // runs only with KOPE_SLOW_TESTS set
  bool compiled = false;  // also time torch.compile of the problem (seconds: it compiles)
  std::string skip;
  std::string cuda_skip;  // why the case does not apply on a GPU; empty where it does
  std::string cpu_skip;   // why it does not apply on the CPU; empty where it does
};

void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

std::vector<Case> LoadCases() {
  std::vector<Case> cases;
  toml::table table = toml::parse_file((TestData() / "cases.toml").string());
  for (const auto& node : *table["case"].as_array()) {
    const toml::table& t = *node.as_table();
    Case c;
    c.problem = t["problem"].value_or(std::string());
    c.candidate = TestData() / "candidates" / t["candidate"].value_or(std::string());
    c.ops = t["ops"].value_or(std::string());
    c.expected = t["expected"].value_or(std::string());
    c.message = t["message"].value_or(std::string());
    c.flag = t["flag"].value_or(std::string());
    c.max_speedup = t["max_speedup"].value_or(0.0);
    c.or_valid_below = t["or_valid_below"].value_or(0.0);
    c.slow = t["slow"].value_or(false);
    c.compiled = t["compiled"].value_or(false);
    c.skip = t["skip"].value_or(std::string());
    c.cuda_skip = t["cuda"].value_or(std::string());
    c.cpu_skip = t["cpu"].value_or(std::string());
    c.name = c.candidate.filename().string() + (c.ops.empty() ? "" : "_ops_" + c.ops);
    if (c.candidate.stem().string().rfind(c.problem, 0) != 0) c.name = c.problem + "_" + c.name;
    for (char& ch : c.name) {
      if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
    }
    cases.push_back(c);
  }
  return cases;
}

TEST(TorchBridgeCases, ManifestIsWellFormed) {
  std::set<std::string> names;
  const std::set<std::string> verdicts = {"valid",         "incorrect", "compile_error",
                                          "runtime_error", "crash",     "timeout"};
  for (const Case& c : LoadCases()) {
    EXPECT_TRUE(names.insert(c.name).second) << "two cases named " << c.name;
    EXPECT_TRUE(fs::is_regular_file(TestData() / "problems" / (c.problem + ".py"))) << c.problem;
    EXPECT_TRUE(fs::is_regular_file(c.candidate)) << c.candidate;
    EXPECT_TRUE(verdicts.count(c.expected)) << c.name << ": " << c.expected;
    EXPECT_TRUE(c.ops.empty() || c.ops == "allow" || c.ops == "forbid") << c.name;
  }
}

// Options for the tests that evaluate a few candidates quickly, without torch.compile.
EvalOptions QuickOptions() {
  EvalOptions options;
  options.runner_exe = TestRunnerExecutable();
  options.trials = 2;
  options.timing.max_seconds = 0.1;
  options.torch_compile_reference = false;
  return options;
}

class TorchBridgeCase : public ::testing::TestWithParam<Case> {
 protected:
  static Backend* backend() { return SharedCpuTestBackend(); }
};

// Evaluates the case's candidate on `backend` and checks what the manifest expects.
void ExpectVerdict(Case c, Backend& backend) {
  Result<Task> task = ImportedTask(c.problem, c.ops);
  ASSERT_TRUE(task.ok()) << task.status().ToString();
  EvalOptions options;
  options.runner_exe = TestRunnerExecutable();
  options.trials = 2;
  options.call_timeout_seconds = 30;
  options.timing.warmup_calls = 1;
  options.timing.warmup_seconds = 0.005;
  options.timing.min_samples = 5;
  options.timing.min_seconds = 0.01;
  options.timing.max_seconds = 0.2;
  options.timing.rotation_sets = 2;
  options.torch_compile_reference = c.compiled;
  std::string trail;  // the evaluation's progress, shown when the verdict is not the expected one
  options.progress = [&trail](std::string_view line) { trail.append(line).append("\n"); };
  Evaluator evaluator(backend, options);
  Result<Outcome> outcome = evaluator.Evaluate(*task, ReadFileText(c.candidate).value_or(""),
                                               c.candidate.filename().string());
  ASSERT_TRUE(outcome.ok()) << outcome.status().ToString();
  std::printf("%s: %s: %s\n", c.name.c_str(), std::string(VerdictName(outcome->verdict)).c_str(),
              outcome->message.c_str());
  if (c.or_valid_below > 0 && outcome->verdict == Verdict::kValid) {
    c.expected = "valid";
    c.message.clear();
    c.max_speedup = c.or_valid_below;
  }
  EXPECT_EQ(VerdictName(outcome->verdict), c.expected) << FormatOutcome(*outcome) << "\n" << trail;
  if (!c.message.empty()) {
    EXPECT_NE((outcome->message + "\n" + outcome->runtime_detail).find(c.message),
              std::string::npos)
        << "expected \"" << c.message << "\" in the outcome\n"
        << FormatOutcome(*outcome);
  }
  // A ModelNew candidate is checked in the task's reference runner (the candidate's tensors in
  // memory the reference shares); a native one by the parent, in its arenas.
  const bool verified =
      outcome->verdict == Verdict::kValid || outcome->verdict == Verdict::kIncorrect;
  if (verified) {
    EXPECT_EQ(outcome->bridge_overhead_by_request.count("check"),
              c.candidate.extension() == ".py" ? 1u : 0u)
        << FormatOutcome(*outcome);
  }
  if (!c.flag.empty()) {
    EXPECT_TRUE(outcome->HasFlag(c.flag)) << "expected the flag " << c.flag << "\n"
                                          << FormatOutcome(*outcome);
    if (c.flag == kFlagTimedFasterThanVerified && outcome->candidate_time) {
      // Its evidence: the fastest verified call, over five times the timed median.
      ASSERT_TRUE(outcome->fastest_verified_bench_s.has_value()) << FormatOutcome(*outcome);
      EXPECT_LT(5 * outcome->candidate_time->median_s, *outcome->fastest_verified_bench_s);
      EXPECT_NE(FormatOutcome(*outcome).find("fastest verified call"), std::string::npos);
    }
  } else if (outcome->verdict == Verdict::kValid) {  // no false alarm
    EXPECT_FALSE(outcome->HasFlag(kFlagTimedFasterThanVerified)) << FormatOutcome(*outcome);
  }
  if (outcome->verdict == Verdict::kValid && c.max_speedup > 0) {  // its work on the clock
    EXPECT_GT(outcome->speedup, 0) << FormatOutcome(*outcome);
    // Above the bound only as far as the timing's own noise goes (the verdict says so).
    if (!outcome->HasFlag(kFlagWithinNoise)) {
      EXPECT_LT(outcome->speedup, c.max_speedup) << FormatOutcome(*outcome);
    }
  }
  if (outcome->verdict == Verdict::kValid && c.compiled) {
    // A PyTorch baseline is also timed under torch.compile.
    EXPECT_TRUE(outcome->compiled_time.has_value()) << FormatOutcome(*outcome);
    EXPECT_GT(outcome->speedup_over_compiled, 0) << FormatOutcome(*outcome);
  }
  if (!c.compiled) {
    EXPECT_FALSE(outcome->compiled_time.has_value());
  }
}

TEST_P(TorchBridgeCase, GetsItsVerdict) {
  const Case& c = GetParam();
  if (!c.skip.empty()) GTEST_SKIP() << c.skip;
  if (!c.cpu_skip.empty()) GTEST_SKIP() << c.cpu_skip;
  if (c.slow && std::getenv("KOPE_SLOW_TESTS") == nullptr) {
    GTEST_SKIP() << "slow case: set KOPE_SLOW_TESTS=1 to run it";
  }
  KOPE_REQUIRE_BRIDGE();
  ASSERT_NE(backend(), nullptr);
  ExpectVerdict(c, *backend());
}

// A ModelNew that builds an extension at import builds it once per source: evaluated again,
// its build folder (kope's cache, keyed by the source) holds the same objects, not rebuilt.
// `candidate` builds an extension whose name starts with `extension`.
void ExpectExtensionBuiltOnce(Backend& backend, const EvalOptions& options,
                              const std::string& candidate, const std::string& extension) {
  Result<Task> task = ImportedTask("scaled_relu", "");
  ASSERT_TRUE(task.ok()) << task.status().ToString();
  const std::string source = ReadFileText(TestData() / "candidates" / candidate).value_or("");
  Evaluator evaluator(backend, options);
  std::map<fs::path, fs::file_time_type> built;
  for (int evaluation = 0; evaluation < 2; ++evaluation) {
    Result<Outcome> o = evaluator.Evaluate(*task, source, candidate);
    ASSERT_TRUE(o.ok()) << o.status().ToString();
    ASSERT_EQ(o->verdict, Verdict::kValid) << FormatOutcome(*o);
    std::map<fs::path, fs::file_time_type> objects;
    for (const auto& entry : fs::recursive_directory_iterator(TorchExtensionCacheDir())) {
      if (entry.path().extension() == ".so" &&
          entry.path().filename().string().rfind(extension, 0) == 0) {
        objects[entry.path()] = entry.last_write_time();
      }
    }
    ASSERT_FALSE(objects.empty()) << "no extension built under " << TorchExtensionCacheDir();
    if (evaluation == 1) {
      EXPECT_EQ(objects, built) << "the extension was built again";
    }
    built = objects;
  }
}

// A candidate of testdata/candidates made new (a comment), so that no earlier run's build folder
// serves it, and the build folder kope gives its source (empty where there is no bridge).
struct FreshCandidate {
  std::string source;
  fs::path folder;
};
FreshCandidate Fresh(const std::string& candidate) {
  FreshCandidate c;
  c.source = ReadFileText(TestData() / "candidates" / candidate).value_or("") +
             fmt::format("\n# {}\n", std::chrono::system_clock::now().time_since_epoch().count());
  Result<TorchBridge> bridge = FindTorchBridge();
  if (bridge.ok()) {
    c.folder = TorchExtensionCacheDir() / ContentHash({c.source, bridge->python.string()});
  }
  return c;
}

// An episode's next candidate that builds an extension gets it built while the current one is
// evaluated (agent::LocalEvaluator::Prepare): its own evaluation waits for that build and finds
// the objects built, so its load phase is the import alone, a small part of the build's time.
void ExpectExtensionPrebuilt(Backend& backend, const EvalOptions& options,
                             const std::string& candidate) {
  Result<Task> task = ImportedTask("scaled_relu", "");
  ASSERT_TRUE(task.ok()) << task.status().ToString();
  const auto [source, folder] = Fresh(candidate);
  ASSERT_FALSE(folder.empty()) << "no bridge";
  const fs::path dir = TestData() / "candidates";
  agent::LocalEvaluator local(backend, /*prebuild=*/true);
  const auto prepared = std::chrono::steady_clock::now();
  local.Prepare(*task, source, candidate, options);
  EXPECT_EQ(local.prebuilds_begun(), 1);
  Result<memory::OutcomeNode> plain = local.Evaluate(
      *task, ReadFileText(dir / "scaled_relu_new.py").value_or(""), "scaled_relu_new.py", options);
  ASSERT_TRUE(plain.ok()) << plain.status().ToString();
  EXPECT_EQ(plain->verdict, "valid") << plain->evidence_json;
  Result<memory::OutcomeNode> built = local.Evaluate(*task, source, candidate, options);
  const double since_prepared =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - prepared).count();
  ASSERT_TRUE(built.ok()) << built.status().ToString();
  ASSERT_EQ(built->verdict, "valid") << built->evidence_json;
  const nlohmann::json evidence = nlohmann::json::parse(built->evidence_json);
  const double load = evidence["phase_seconds"].value("load", 0.0);
  const double eval = evidence.value("eval_seconds", 0.0);
  // The build took most of the time since it began (a minute); the evaluation's load did not.
  EXPECT_LT(load, 0.5 * (since_prepared - eval + load)) << built->evidence_json;
  std::error_code ec;
  fs::remove_all(folder, ec);
}

#if KOPE_TEST_CUDA
// The ModelNew cases on the GPU: the same verdicts, with the candidate checked on the device.
class TorchBridgeCudaCase : public ::testing::TestWithParam<Case> {
 protected:
  static Backend* backend() {
    static Backend* backend = []() -> Backend* {
      if (!CudaDevicePresent()) return nullptr;
      CudaBackendOptions options;
      options.cache_dir = fs::path(kope::testing::BinaryDir()) / "test-cache";
      auto created = CreateCudaBackend(options);
      return created.ok() ? std::move(created).value().release() : nullptr;
    }();
    return backend;
  }
};

TEST_P(TorchBridgeCudaCase, GetsItsVerdictOnTheGpu) {
  const Case& c = GetParam();
  if (!c.skip.empty()) GTEST_SKIP() << c.skip;
  if (c.candidate.extension() != ".py") GTEST_SKIP() << "a native candidate here runs on the CPU";
  if (!c.cuda_skip.empty()) GTEST_SKIP() << c.cuda_skip;
  if (!CudaDevicePresent()) GTEST_SKIP() << "no CUDA GPU here";
  KOPE_REQUIRE_BRIDGE();
  ASSERT_NE(backend(), nullptr) << "a GPU, but no CUDA backend";
  ExpectVerdict(c, *backend());
}

TEST_F(TorchBridgeCudaCase, AnExtensionIsBuiltOncePerSourceOnTheGpu) {
  if (!CudaDevicePresent()) GTEST_SKIP() << "no CUDA GPU here";
  KOPE_REQUIRE_BRIDGE();
  ASSERT_NE(backend(), nullptr) << "a GPU, but no CUDA backend";
  ExpectExtensionBuiltOnce(*backend(), QuickOptions(), "scaled_relu_load_inline_cuda.py",
                           "kope_test_scaled_relu_cuda");
}

TEST_F(TorchBridgeCudaCase, TheNextCandidatesExtensionIsBuiltWhileOneIsEvaluatedOnTheGpu) {
  if (!CudaDevicePresent()) GTEST_SKIP() << "no CUDA GPU here";
  KOPE_REQUIRE_BRIDGE();
  ASSERT_NE(backend(), nullptr) << "a GPU, but no CUDA backend";
  ExpectExtensionPrebuilt(*backend(), QuickOptions(), "scaled_relu_load_inline_cuda.py");
}
#endif  // KOPE_TEST_CUDA

// Candidates of one problem through one runner pool, as an optimization episode or a suite
// evaluates them: the problem's runner is kept, each candidate's runner is a spare started
// ahead that has mapped the last candidate's arenas, and the verdicts stay those of fresh
// runners (a cache keyed by address and an in-place write are still caught).
TEST_F(TorchBridgeCase, CandidatesThroughOnePoolKeepTheirVerdicts) {
  KOPE_REQUIRE_BRIDGE();
  ASSERT_NE(backend(), nullptr);
  Result<Task> task = ImportedTask("scaled_relu", "");
  ASSERT_TRUE(task.ok()) << task.status().ToString();
  RunnerPoolOptions pool_options;
  pool_options.spares = true;
  pool_options.spares_for_next_task = true;
  EvalOptions options = QuickOptions();
  options.pool = std::make_shared<RunnerPool>(pool_options);
  Evaluator evaluator(*backend(), options);
  const fs::path dir = TestData() / "candidates";
  const std::pair<const char*, const char*> sequence[] = {{"scaled_relu_new.py", "valid"},
                                                          {"scaled_relu_cache.py", "incorrect"},
                                                          {"scaled_relu_inplace.py", "incorrect"},
                                                          {"scaled_relu_new.py", "valid"}};
  int evaluation = 0;
  for (const auto& [candidate, expected] : sequence) {
    Result<Outcome> o =
        evaluator.Evaluate(*task, ReadFileText(dir / candidate).value_or(""), candidate);
    ASSERT_TRUE(o.ok()) << o.status().ToString();
    EXPECT_EQ(VerdictName(o->verdict), expected) << candidate << "\n" << FormatOutcome(*o);
    if (evaluation++ > 0) {
      EXPECT_EQ(o->runners_reused, 1) << candidate;
      EXPECT_EQ(o->runners_from_spares, 1) << candidate;
    }
  }
}

TEST_F(TorchBridgeCase, AnExtensionIsBuiltOncePerSource) {
  if (std::getenv("KOPE_SLOW_TESTS") == nullptr) {
    GTEST_SKIP() << "slow on the CPU (a C++ extension build): set KOPE_SLOW_TESTS=1 to run it";
  }
  KOPE_REQUIRE_BRIDGE();
  ASSERT_NE(backend(), nullptr);
  ExpectExtensionBuiltOnce(*backend(), QuickOptions(), "scaled_relu_load_inline.py",
                           "kope_test_scaled_relu");
}

TEST_F(TorchBridgeCase, TheNextCandidatesExtensionIsBuiltWhileOneIsEvaluated) {
  if (std::getenv("KOPE_SLOW_TESTS") == nullptr) {
    GTEST_SKIP() << "slow on the CPU (a C++ extension build): set KOPE_SLOW_TESTS=1 to run it";
  }
  KOPE_REQUIRE_BRIDGE();
  ASSERT_NE(backend(), nullptr);
  ExpectExtensionPrebuilt(*backend(), QuickOptions(), "scaled_relu_load_inline.py");
}

// An evaluator that ends while the next candidate's extension builds ends that build: it was for
// a candidate that will not be evaluated now (a cancelled episode, Ctrl-C).
TEST_F(TorchBridgeCase, ABuildAheadEndsWithItsEvaluator) {
  if (std::getenv("KOPE_SLOW_TESTS") == nullptr) {
    GTEST_SKIP() << "slow on the CPU (a C++ extension build): set KOPE_SLOW_TESTS=1 to run it";
  }
  KOPE_REQUIRE_BRIDGE();
  ASSERT_NE(backend(), nullptr);
  Result<Task> task = ImportedTask("scaled_relu", "");
  ASSERT_TRUE(task.ok()) << task.status().ToString();
  const auto [source, folder] = Fresh("scaled_relu_load_inline.py");
  ASSERT_FALSE(folder.empty()) << "no bridge";
  {
    agent::LocalEvaluator local(*backend(), /*prebuild=*/true);
    local.Prepare(*task, source, "scaled_relu_load_inline.py", QuickOptions());
    // Until its runner is building: the build's ninja file written (at most a minute).
    const auto building = [&folder] {
      std::error_code ec;
      for (const auto& entry : fs::recursive_directory_iterator(folder, ec)) {
        if (entry.path().filename() == "build.ninja") return true;
      }
      return false;
    };
    for (int k = 0; k < 600 && !building(); ++k) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    ASSERT_TRUE(building()) << "the build ahead never began";
  }
  bool built = false;
  std::error_code ec;
  for (const auto& entry : fs::recursive_directory_iterator(folder, ec)) {
    built = built || entry.path().extension() == ".so";
  }
  EXPECT_FALSE(built) << "the build ran on after its evaluator ended";
  fs::remove_all(folder, ec);
}

// A problem whose output ignores its inputs cannot tell a right candidate from a wrong one:
// the reference runner's fingerprints of its outputs (a ModelNew candidate is checked there)
// must make kope refuse it, as kope's own hashes do for native candidates.
TEST_F(TorchBridgeCase, AProblemWhoseOutputIsConstantIsRefused) {
  KOPE_REQUIRE_BRIDGE();
  ASSERT_NE(backend(), nullptr);
  Result<Task> task = ImportedTask("zeroed_rows", "");
  ASSERT_TRUE(task.ok()) << task.status().ToString();
  Evaluator evaluator(*backend(), QuickOptions());
  Result<Outcome> o = evaluator.Evaluate(*task, "class ModelNew(Model):\n    pass\n", "same.py");
  ASSERT_FALSE(o.ok()) << FormatOutcome(*o);
  EXPECT_EQ(o.status().code(), StatusCode::kFailedPrecondition) << o.status().ToString();
  EXPECT_NE(o.status().message().find("is constant"), std::string::npos) << o.status().ToString();
}

// A reference whose calls take longer than the configured limit for one call (a large problem on
// a slow machine) is the task's own code: it gets the checker's time, and the candidate's limit
// follows it (EvalSession::CandidateTimeout), so the same code as a candidate is valid, not a
// timeout.
TEST_F(TorchBridgeCase, ACandidatesTimeLimitFollowsASlowReference) {
  KOPE_REQUIRE_BRIDGE();
  ASSERT_NE(backend(), nullptr);
  Result<Task> task = ImportedTask("slow_at_bench", "");
  ASSERT_TRUE(task.ok()) << task.status().ToString();
  EvalOptions options = QuickOptions();
  options.call_timeout_seconds = 0.2;  // its bench-size calls take 0.3 s
  Evaluator evaluator(*backend(), options);
  Result<Outcome> o = evaluator.Evaluate(*task, "class ModelNew(Model):\n    pass\n", "same.py");
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  EXPECT_EQ(o->verdict, Verdict::kValid) << FormatOutcome(*o);
  ASSERT_TRUE(o->candidate_time.has_value());
  EXPECT_GT(o->candidate_time->median_s, 0.25) << FormatOutcome(*o);
}

std::string CaseName(const ::testing::TestParamInfo<Case>& param_info) {
  return param_info.param.name;
}

INSTANTIATE_TEST_SUITE_P(Cases, TorchBridgeCase, ::testing::ValuesIn(LoadCases()), CaseName);
#if KOPE_TEST_CUDA
INSTANTIATE_TEST_SUITE_P(Cases, TorchBridgeCudaCase, ::testing::ValuesIn(LoadCases()), CaseName);
#endif

}  // namespace
}  // namespace kope
