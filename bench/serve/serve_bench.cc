// serve_bench: how long ServeApi takes to answer each page's endpoints (server time, without
// the network) on a store of 100k attempts (and a workload with 50 validation reports). Prints
// one line per endpoint: the median and the slowest of its repetitions, against the 200 ms
// target.
//
//   serve_bench [--store PATH] [--repeat N]
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "bench_support.h"
#include "kope/memory/sqlite/sqlite_store.h"
#include "kope/serve/api.h"
#include "synthetic_graph.h"

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

struct Endpoint {
  std::string page;
  kope::serve::ApiRequest request;
};

// A workload with kDeployments validation reports (kope-validation-1), each of kTrials
// candidates with their figures alone, for the deployments page; added once to the store.
constexpr int kDeployments = 50, kTrials = 12;

json Figures(double speedup) {
  json phase = {{"unpatched", {{"median", 10}}},
                {"patched", {{"median", 10 / speedup}}},
                {"speedup", speedup},
                {"noise", 0.02},
                {"win", speedup > 1.02},
                {"loss", speedup < 0.98}};
  json out = json::array();
  for (int entry = 0; entry < 2; ++entry) {
    out.push_back({{"entry", entry},
                   {"batch", entry == 0 ? 1 : 8},
                   {"prefill_ms", phase},
                   {"decode_tokens_per_s", phase},
                   {"request_ms", phase}});
  }
  return out;
}

void AddDeployments(kope::memory::GraphStore& store) {
  kope::Status written = store.Write([](kope::memory::GraphWriter& w) -> kope::Status {
    kope::memory::WorkloadNode workload;
    workload.name = "bench-workload";
    workload.workload_hash = "serve-bench";
    KOPE_ASSIGN_OR_RETURN(kope::memory::NodeId id, w.PutWorkload(workload));
    for (int d = 0; d < kDeployments; ++d) {
      json tried = json::array();
      for (int t = 0; t < kTrials; ++t) {
        tried.push_back({{"attempt", 1 + t},
                         {"kind", "native"},
                         {"accepted", t == 0},
                         {"reason", t == 0 ? "accepted" : "fails in the model: top-1 0.9"},
                         {"gate", {{"passed", t == 0}}},
                         {"e2e", Figures(1 + 0.01 * t)}});
      }
      json report = {{"format", "kope-validation-1"},
                     {"workload", workload.name},
                     {"tasks", {{{"task", "rmsnorm"}, {"tried", tried}}}},
                     {"dropped", json::array()},
                     {"patches", {"rmsnorm"}},
                     {"gate", nullptr},
                     {"artifact", "/out/" + std::to_string(d)},
                     {"e2e", Figures(1.1)}};
      kope::memory::DeploymentRecord record;
      record.workload_id = id;
      record.report_json = report.dump();
      KOPE_RETURN_IF_ERROR(w.AddDeployment(record).status());
    }
    return kope::Status::Ok();
  });
  if (!written.ok()) {
    std::fprintf(stderr, "serve_bench: %s\n", written.ToString().c_str());
    std::exit(1);
  }
}

std::unique_ptr<kope::memory::GraphStore> OpenOrMake(const fs::path& path) {
  const bool exists = fs::exists(path);
  auto store = kope::memory::OpenSqliteStore(path);
  if (!store.ok()) {
    std::fprintf(stderr, "serve_bench: %s\n", store.status().ToString().c_str());
    std::exit(1);
  }
  if (!exists) {
    kope::memory::bench::GraphShape shape;
    shape.families = 10;
    shape.tasks_per_family = 10;
    shape.runs_per_task = 20;
    shape.attempts_per_run = 50;  // 10 * 10 * 20 * 50 = 100k attempts
    shape.insights = 2000;
    std::fprintf(stderr, "serve_bench: generating %s\n", path.c_str());
    kope::Status made = kope::memory::bench::Generate(**store, shape);
    if (!made.ok()) {
      std::fprintf(stderr, "serve_bench: %s\n", made.ToString().c_str());
      fs::remove(path);
      std::exit(1);
    }
  }
  auto workloads = (*store)->ListWorkloads();
  if (workloads.ok() && workloads->empty()) AddDeployments(**store);
  return std::move(store).value();
}

json Answer(const kope::serve::ServeApi& api, const std::string& path,
            std::map<std::string, std::string> params = {}) {
  kope::serve::ApiResponse r = api.Handle({path, std::move(params)});
  if (r.status != 200) {
    std::fprintf(stderr, "serve_bench: %s: %d %s\n", path.c_str(), r.status, r.body.c_str());
    std::exit(1);
  }
  return json::parse(r.body);
}

// Ids from the middle of the store: a run, one of its attempts, its task, an insight, a word.
std::vector<Endpoint> Endpoints(const kope::serve::ServeApi& api) {
  json runs = Answer(api, "/api/runs", {{"offset", "500"}, {"limit", "1"}});
  const json& run = runs["runs"][0];
  const std::string r = std::to_string(run["id"].get<int64_t>());
  const std::string t = std::to_string(run["task"].get<int64_t>());
  json tree = Answer(api, "/api/runs/" + r + "/tree");
  const std::string a =
      std::to_string(tree["nodes"][tree["nodes"].size() / 2]["id"].get<int64_t>());
  json insights = Answer(api, "/api/insights", {{"limit", "1"}});
  const std::string i = std::to_string(insights["insights"][0]["id"].get<int64_t>());
  const std::string family = run["op_family"];
  json workloads = Answer(api, "/api/workloads");
  const std::string w = std::to_string(workloads["workloads"][0]["id"].get<int64_t>());
  return {
      {"runs", {"/api/facets", {}}},
      {"runs", {"/api/runs", {}}},
      {"runs (filtered)", {"/api/runs", {{"family", family}, {"since", "2000-01-01"}}}},
      {"suites", {"/api/suites", {}}},
      {"run", {"/api/runs/" + r, {}}},
      {"run", {"/api/runs/" + r + "/tree", {}}},
      {"run", {"/api/runs/" + r + "/charts", {}}},
      {"live run (poll)", {"/api/runs/" + r + "/attempts", {{"after", a}}}},
      {"attempt", {"/api/attempts/" + a, {}}},
      {"task (roofline)", {"/api/tasks/" + t, {}}},
      {"insights", {"/api/insights", {}}},
      {"insights (search)", {"/api/insights", {{"q", "vectorize"}}}},
      {"insight", {"/api/insights/" + i, {}}},
      {"search", {"/api/search", {{"q", "tile shared memory"}}}},
      {"deployments", {"/api/workloads", {}}},
      {"workload", {"/api/workloads/" + w, {}}},
      {"stats", {"/api/stats", {}}},
  };
}

}  // namespace

int main(int argc, char** argv) {
  fs::path path = fs::path(KOPE_BENCH_DIR) / "store_100k.db";
  int repeat = 5;
  for (int k = 1; k + 1 < argc; k += 2) {
    if (std::string(argv[k]) == "--store") path = argv[k + 1];
    if (std::string(argv[k]) == "--repeat") repeat = std::atoi(argv[k + 1]);
  }
  auto store = OpenOrMake(path);
  auto stats = store->Stats();
  std::printf("store %s: %lld attempts, %lld runs, %lld insights\n", path.c_str(),
              static_cast<long long>(stats->attempts), static_cast<long long>(stats->runs),
              static_cast<long long>(stats->insights));
  const kope::serve::ServeApi api(*store);
  std::printf("%-18s %-44s %10s %10s %8s\n", "page", "endpoint", "median ms", "max ms", "bytes");
  bool within = true;
  for (const Endpoint& e : Endpoints(api)) {
    std::vector<double> ms;
    size_t bytes = 0;
    for (int k = 0; k < repeat; ++k) {
      const double start = kope::bench::Now();
      kope::serve::ApiResponse r = api.Handle(e.request);
      ms.push_back(1e3 * (kope::bench::Now() - start));
      bytes = r.body.size();
    }
    std::string query;
    for (const auto& [k, v] : e.request.params) query += (query.empty() ? "?" : "&") + k + "=" + v;
    const double worst = *std::max_element(ms.begin(), ms.end());
    within = within && worst <= 200;
    std::printf("%-18s %-44s %10.1f %10.1f %8zu\n", e.page.c_str(),
                (e.request.path + query).substr(0, 44).c_str(), kope::bench::Median(ms), worst,
                bytes);
  }
  std::printf("every endpoint within 200 ms: %s\n", within ? "yes" : "no");
  return 0;
}
