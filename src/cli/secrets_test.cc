// Secrets: an episode driven by an OpenAI-compatible server that needs an API key (a marker
// value), and that echoes the key back in an error body once, as some servers do. The key must
// reach no artifact of the run: the store (and its journal), kope's output and logs, the LLM
// response cache, the memory export and the best kernel written.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "kope/base/file.h"
#include "kope/base/subprocess.h"
#include "llm/testing/llm_test_server.h"
#include "testing/test_paths.h"

namespace kope {
namespace {

namespace fs = std::filesystem;
using llm::testing::LlmTestServer;
using llm::testing::ServerAction;

constexpr const char* kMarker = "sk-kope-marker-7f3a9c1e5b2d4086";

// The kernel of src/agent/testdata/tasks/scale_small: y = 2 x.
constexpr const char* kKernel =
    "#include \"kope/kernel.h\"\n#include <cstdint>\n"
    "extern \"C\" int kope_kernel(const kope_tensor* in, int ni, kope_tensor* out, int no, "
    "void*) {\n  if (ni != 1 || no != 1) return 1;\n"
    "  const float* x = static_cast<const float*>(in[0].data);\n"
    "  float* y = static_cast<float*>(out[0].data);\n"
    "  for (int64_t i = 0; i < in[0].shape[0]; ++i) y[i] = x[i] + x[i];\n  return 0;\n}\n";

class Secrets : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("kope-secrets-test-" + std::to_string(getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  ProcessResult Kope(std::vector<std::string> args) {
    args.insert(args.begin(), (fs::path(kope::testing::BinaryDir()) / "kope").string());
    ProcessOptions options;
    options.timeout_seconds = 300;
    options.extra_env = {
        "KOPE_CACHE_DIR=" + (fs::path(kope::testing::BinaryDir()) / "test-cache").string(),
        std::string("KOPE_SECRETS_TEST_KEY=") + kMarker};
    Result<ProcessResult> r = RunProcess(args, options);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? *r : ProcessResult{};
  }

  // Every file under the run's folder that holds the marker.
  std::vector<std::string> FilesWithMarker() const {
    std::vector<std::string> found;
    for (const fs::directory_entry& e : fs::recursive_directory_iterator(dir_)) {
      if (!e.is_regular_file()) continue;
      std::ifstream in(e.path(), std::ios::binary);
      std::stringstream bytes;
      bytes << in.rdbuf();
      if (bytes.str().find(kMarker) != std::string::npos) found.push_back(e.path().string());
    }
    return found;
  }

  fs::path dir_;
};

TEST_F(Secrets, TheApiKeyReachesNoArtifact) {
  auto server = LlmTestServer::Start();
  ASSERT_TRUE(server.ok()) << server.status().ToString();
  (*server)->RequireKey(kMarker);
  ServerAction echo = ServerAction::Error(500);
  echo.error_message = std::string("upstream rejected key ") + kMarker;
  (*server)->Enqueue(echo);
  (*server)->SetDefault(
      ServerAction::Reply(std::string("DECISION: add x to itself\n```cpp\n") + kKernel + "```\n"));
  std::ofstream(dir_ / "llm.toml") << "default = \"server\"\n[cache]\ndir = \"llm-cache\"\n"
                                      "[providers.server]\nkind = \"openai\"\nbase_url = \""
                                   << (*server)->openai_base_url()
                                   << "\"\nmodel = \"test-model\"\n"
                                      "api_key_env = \"KOPE_SECRETS_TEST_KEY\"\n";
  const fs::path task =
      fs::path(kope::testing::SourceDir()) / "src/agent/testdata/tasks/scale_small";
  const std::string store = (dir_ / "store.db").string();
  ProcessResult run = Kope({"optimize", task.string(), "--llm", "--llm-config",
                            (dir_ / "llm.toml").string(), "--store", store, "--attempts", "2",
                            "--no-confirm", "--json", "--out", (dir_ / "best.cc").string()});
  ASSERT_EQ(run.exit_code, 0) << run.output;
  ProcessResult exported =
      Kope({"memory", "export", "--store", store, (dir_ / "export.jsonl").string()});
  ASSERT_EQ(exported.exit_code, 0) << exported.output;
  std::ofstream(dir_ / "output.log") << run.output << exported.output;

  // The key was sent (the server saw it), so the test tests something.
  ASSERT_FALSE((*server)->requests().empty());
  EXPECT_NE((*server)->requests().back().headers["authorization"].find(kMarker), std::string::npos);
  EXPECT_TRUE(fs::exists(dir_ / "llm-cache"));
  EXPECT_TRUE(FilesWithMarker().empty())
      << "the API key is in: " << ::testing::PrintToString(FilesWithMarker());
}

}  // namespace
}  // namespace kope
