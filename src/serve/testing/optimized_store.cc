#include "testing/optimized_store.h"

#include <stdlib.h>

#include <nlohmann/json.hpp>

#include "kope/base/subprocess.h"
#include "testing/test_paths.h"

namespace kope::serve::testing {
namespace {

namespace fs = std::filesystem;

struct Holder {
  OptimizedStore value;
  ~Holder() {
    std::error_code ec;
    if (!value.dir.empty()) fs::remove_all(value.dir, ec);
  }
};

OptimizedStore Make() {
  OptimizedStore out;
  out.dir = MakeScratchDir("kope-serve-test");
  out.store = out.dir / "store.db";
  const fs::path binary = kope::testing::BinaryDir();
  ProcessOptions options;
  options.timeout_seconds = 300;
  options.extra_env = {"KOPE_CACHE_DIR=" + (binary / "serve-test-cache").string()};
  auto result =
      RunProcess({(binary / "kope").string(), "optimize",
                  (fs::path(kope::testing::SourceDir()) / "examples/rmsnorm").string(), "--store",
                  out.store.string(), "--attempts", "4", "--patience", "0", "--sol", "0",
                  "--no-confirm", "--json", "-q", "--out", (out.dir / "best.cc").string()},
                 options);
  if (!result.ok()) {
    out.error = result.status().ToString();
    return out;
  }
  nlohmann::json report = nlohmann::json::parse(result->output, nullptr, false);
  if (result->exit_code != 0 || !report.is_object() || !report.contains("run")) {
    out.error = "kope optimize failed: " + result->output;
    return out;
  }
  out.run = report["run"].get<int64_t>();
  return out;
}

}  // namespace

memory::NodeId AddDeployedWorkload(memory::GraphStore& store, memory::NodeId rejected,
                                   memory::NodeId accepted) {
  using nlohmann::json;
  auto figures = [](double prefill, double decode) {
    return json::array({{{"entry", 0},
                         {"batch", 1},
                         {"prefill_ms",
                          {{"unpatched", {{"median", 20}}},
                           {"patched", {{"median", 20 / prefill}}},
                           {"speedup", prefill},
                           {"noise", 0.02},
                           {"win", prefill > 1.02},
                           {"loss", false}}},
                         {"decode_tokens_per_s",
                          {{"unpatched", {{"median", 50}}},
                           {"patched", {{"median", 50 * decode}}},
                           {"speedup", decode},
                           {"noise", 0.03},
                           {"win", decode > 1.03},
                           {"loss", decode < 0.97}}}}});
  };
  const json report = {{"format", "kope-validation-1"},
                       {"workload", "chat"},
                       {"tasks",
                        {{{"task", "rmsnorm"},
                          {"tried",
                           {{{"attempt", rejected},
                             {"kind", "native"},
                             {"accepted", false},
                             {"reason", "fails in the model: top-1 agreement 0.5 < 0.99"},
                             {"gate", {{"passed", false}}}},
                            {{"attempt", accepted},
                             {"kind", "native"},
                             {"accepted", true},
                             {"reason", "accepted"},
                             {"gate", {{"passed", true}}},
                             {"e2e", figures(1.25, 1.1)}}}}}}},
                       {"dropped", json::array()},
                       {"patches", {"rmsnorm"}},
                       {"gate", nullptr},
                       {"artifact", "/out/kope-patch-chat"},
                       {"e2e", figures(1.25, 1.1)}};
  memory::NodeId workload = 0;
  Status written = store.Write([&](memory::GraphWriter& w) -> Status {
    memory::WorkloadNode node;
    node.name = "chat";
    node.workload_hash = "test";
    node.attrs_json = R"({"model":{"source":"config","architecture":"llama"}})";
    KOPE_ASSIGN_OR_RETURN(workload, w.PutWorkload(node));
    memory::DeploymentRecord d;
    d.workload_id = workload;
    d.report_json = report.dump();
    return w.AddDeployment(d).status();
  });
  if (!written.ok()) std::abort();
  return workload;
}

fs::path MakeScratchDir(const std::string& prefix) {
  std::string pattern = (fs::temp_directory_path() / (prefix + "-XXXXXX")).string();
  if (::mkdtemp(pattern.data()) == nullptr) std::abort();
  return pattern;
}

const OptimizedStore& SharedOptimizedStore() {
  static Holder holder{Make()};
  return holder.value;
}

}  // namespace kope::serve::testing
