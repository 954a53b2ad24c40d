// The experience graph's benchmark: insert throughput in batches, retrieval latency (p50, p95,
// p99) of the queries the context manager uses on a store of about 1,000,000 nodes, and bytes
// per attempt. The 1M-node store is generated once and cached in the build folder.
//
//   memory_bench [--store PATH] [--regenerate] [--queries N] [--scale F] [--skip-insert]
//
// --scale shrinks the generated graph (0.01 for a quick look); the cached store is reused only
// when it was generated with the same shape.
#include <sqlite3.h>
#include <sys/resource.h>
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "kope/memory/sqlite/sqlite_store.h"
#include "retrieval_queries.h"
#include "synthetic_graph.h"

namespace kope::memory::bench {
namespace {

using Clock = std::chrono::steady_clock;

double Millis(Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

// CPU seconds of this process (user + system): unlike wall time, not inflated when other
// processes share the machine's cores.
double ProcessCpuSeconds() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
         static_cast<double>(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6;
}

double ThreadCpuMillis() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) * 1e3 + static_cast<double>(t.tv_nsec) / 1e6;
}

double LoadAverage() {
  double load[1] = {0};
  return getloadavg(load, 1) == 1 ? load[0] : -1;
}

struct Options {
  std::filesystem::path store = std::filesystem::path(KOPE_BENCH_DIR) / "store_1m.db";
  bool regenerate = false;
  bool skip_insert = false;
  bool insert_only = false;
  int queries = 1000;
  double scale = 1.0;
};

// Removes a file left by an earlier run; anything but a regular file is left alone.
void RemoveRegularFile(const std::filesystem::path& path) {
  std::error_code ec;
  if (std::filesystem::is_regular_file(path, ec)) std::filesystem::remove(path, ec);
}

[[noreturn]] void Die(const Status& status) {
  std::fprintf(stderr, "memory_bench: %s\n", status.ToString().c_str());
  std::exit(1);
}

template <typename T>
T Check(Result<T> result) {
  if (!result.ok()) Die(result.status());
  return std::move(result).value();
}

// 40 tasks with one run each, on one hardware; the runs' ids.
std::vector<NodeId> PutInsertRuns(GraphStore& store) {
  std::vector<NodeId> runs;
  Status s = store.Write([&](GraphWriter& w) -> Status {
    HardwareNode h;
    h.backend = "cuda";
    h.device = "NVIDIA H100";
    h.arch = "sm_90";
    KOPE_ASSIGN_OR_RETURN(NodeId hw, w.PutHardware(h));
    for (int t = 0; t < 40; ++t) {
      TaskNode task;
      task.name = "task_" + std::to_string(t);
      task.op_family = FamilyName(t % 4);
      task.size = 1e5;
      KOPE_ASSIGN_OR_RETURN(NodeId task_id, w.PutTask(task));
      RunNode run;
      run.task_id = task_id;
      run.hardware_id = hw;
      KOPE_ASSIGN_OR_RETURN(NodeId run_id, w.PutRun(run));
      runs.push_back(run_id);
    }
    return Status::Ok();
  });
  if (!s.ok()) Die(s);
  return runs;
}

// One attempt to insert: its run (an index), decision, source and speedup.
struct InsertInput {
  size_t run;
  std::string decision;
  std::string source;
  double speedup;
};

// `total` attempts on random runs, each source derived from its run's last one.
std::vector<InsertInput> MakeInsertInputs(std::mt19937_64& rng, int total,
                                          std::vector<std::string>& last_source) {
  std::vector<InsertInput> inputs;
  inputs.reserve(static_cast<size_t>(total));
  for (int i = 0; i < total; ++i) {
    size_t r = rng() % last_source.size();
    std::string source = Mutate(rng, last_source[r], 2);
    last_source[r] = source;
    inputs.push_back({r, MakeDecision(rng, static_cast<int>(rng() % 18)), std::move(source),
                      1.0 + static_cast<double>(rng() % 100) / 50.0});
  }
  return inputs;
}

// Writes the inputs, `batch` attempt+outcome pairs per transaction, each attempt a child of its
// run's last one.
void WriteInsertInputs(GraphStore& store, const std::vector<InsertInput>& inputs, int batch,
                       const std::vector<NodeId>& runs, std::vector<NodeId>& last_id) {
  const int total = static_cast<int>(inputs.size());
  for (int done = 0; done < total; done += batch) {
    Status s = store.Write([&](GraphWriter& w) -> Status {
      for (int i = done; i < done + batch; ++i) {
        const InsertInput& in = inputs[static_cast<size_t>(i)];
        AttemptNode a;
        a.run_id = runs[in.run];
        a.parent_id = last_id[in.run];
        a.decision = in.decision;
        a.proposer = "llm:model-a";
        KOPE_ASSIGN_OR_RETURN(NodeId id, w.PutAttempt(a, in.source));
        OutcomeNode o;
        o.attempt_id = id;
        o.verdict = "valid";
        o.speedup = in.speedup;
        o.time_ms = 1.0 / in.speedup;
        o.evidence_json = R"({"median_ms":1.0,"spread":0.01,"runs":25})";
        KOPE_RETURN_IF_ERROR(w.PutOutcome(o).status());
        last_id[in.run] = id;
      }
      return Status::Ok();
    });
    if (!s.ok()) Die(s);
  }
}

// Insert throughput: attempt+outcome pairs, with diffs to their parents, per transaction batch.
void InsertBenchmark() {
  std::filesystem::path path = std::filesystem::path(KOPE_BENCH_DIR) / "insert.db";
  for (const char* suffix : {"", "-wal", "-shm"}) RemoveRegularFile(path.string() + suffix);
  auto store = Check(OpenSqliteStore(path));
  std::mt19937_64 rng(99);
  const std::vector<NodeId> runs = PutInsertRuns(*store);
  std::vector<std::string> last_source(runs.size());
  for (size_t r = 0; r < runs.size(); ++r) last_source[r] = MakeKernel(rng, static_cast<int>(r));
  std::vector<NodeId> last_id(runs.size(), 0);

  std::printf(
      "\n## Insert throughput (attempt + outcome pairs, durable commits; load average "
      "%.1f)\n\n",
      LoadAverage());

  std::printf(
      "| batch (pairs per transaction) | pairs | wall s | pairs per wall second | CPU s | "
      "pairs per CPU second |\n");
  std::printf("|---:|---:|---:|---:|---:|---:|\n");
  for (auto [batch, total] : {std::pair{1, 300}, std::pair{100, 20000}, std::pair{1000, 60000},
                              std::pair{10000, 60000}}) {
    // The inputs are made before the clock starts: the figure is the store's, not the
    // generator's.
    const std::vector<InsertInput> inputs = MakeInsertInputs(rng, total, last_source);
    auto start = Clock::now();
    const double cpu_start = ProcessCpuSeconds();
    WriteInsertInputs(*store, inputs, batch, runs, last_id);
    double seconds = std::chrono::duration<double>(Clock::now() - start).count();
    double cpu = ProcessCpuSeconds() - cpu_start;
    std::printf("| %d | %d | %.2f | %.0f | %.2f | %.0f |\n", batch, total, seconds, total / seconds,
                cpu, total / cpu);
  }
}

struct Latency {
  std::string name;
  std::vector<double> ms;      // wall clock
  std::vector<double> cpu_ms;  // this thread's CPU time
  size_t results = 0;
};

void PrintLatencyHeader() {
  std::printf(
      "| query | p50 ms | p95 ms | p99 ms | max ms | CPU p50 ms | CPU p95 ms | "
      "mean results |\n");
  std::printf("|---|---:|---:|---:|---:|---:|---:|---:|\n");
}

void PrintLatency(Latency& l) {
  std::sort(l.ms.begin(), l.ms.end());
  std::sort(l.cpu_ms.begin(), l.cpu_ms.end());
  auto at = [](const std::vector<double>& v, double q) {
    return v[std::min(v.size() - 1, static_cast<size_t>(q * static_cast<double>(v.size())))];
  };
  std::printf("| %s | %.3f | %.3f | %.3f | %.3f | %.3f | %.3f | %.1f |\n", l.name.c_str(),
              at(l.ms, 0.50), at(l.ms, 0.95), at(l.ms, 0.99), l.ms.back(), at(l.cpu_ms, 0.50),
              at(l.cpu_ms, 0.95),
              static_cast<double>(l.results) / static_cast<double>(l.ms.size()));
  std::fflush(stdout);
}

// Bytes on disk by table (indexes and full-text shadow tables counted with their table).
void PrintSpace(const std::filesystem::path& path, int64_t attempts) {
  sqlite3* db = nullptr;
  sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr);
  sqlite3_stmt* stmt = nullptr;
  const char* sql =
      "SELECT coalesce(m.tbl_name, d.name), sum(d.pgsize) FROM dbstat d "
      "LEFT JOIN sqlite_master m ON m.name = d.name GROUP BY 1 ORDER BY 2 DESC";
  if (sqlite3_prepare_v2(db, sql, -1, &stmt, nullptr) != SQLITE_OK) {
    std::printf("(dbstat unavailable: %s)\n", sqlite3_errmsg(db));
    sqlite3_close(db);
    return;
  }
  std::map<std::string, int64_t> by_owner;
  int64_t total = 0;
  while (sqlite3_step(stmt) == SQLITE_ROW) {
    std::string name = reinterpret_cast<const char*>(sqlite3_column_text(stmt, 0));
    for (const char* fts : {"tasks_fts", "attempts_fts", "insights_fts", "errors_fts"}) {
      if (name.rfind(fts, 0) == 0) name = std::string(fts) + " (full-text index)";
    }
    int64_t bytes = sqlite3_column_int64(stmt, 1);
    by_owner[name] += bytes;
    total += bytes;
  }
  sqlite3_finalize(stmt);
  sqlite3_close(db);
  std::printf("\n| table (with its indexes) | MiB | bytes per attempt |\n|---|---:|---:|\n");
  std::vector<std::pair<int64_t, std::string>> sorted;
  for (const auto& [name, bytes] : by_owner) sorted.emplace_back(bytes, name);
  std::sort(sorted.rbegin(), sorted.rend());
  for (const auto& [bytes, name] : sorted) {
    if (bytes < total / 200) continue;
    std::printf("| %s | %.1f | %.0f |\n", name.c_str(), static_cast<double>(bytes) / (1 << 20),
                static_cast<double>(bytes) / static_cast<double>(attempts));
  }
  std::printf("| **all** | %.1f | %.0f |\n", static_cast<double>(total) / (1 << 20),
              static_cast<double>(total) / static_cast<double>(attempts));
}

GraphShape ShapeFor(double scale) {
  GraphShape shape;
  shape.tasks_per_family = std::max(1, static_cast<int>(shape.tasks_per_family * std::sqrt(scale)));
  shape.runs_per_task = std::max(1, static_cast<int>(shape.runs_per_task * std::sqrt(scale)));
  shape.insights = std::max(10, static_cast<int>(shape.insights * scale));
  return shape;
}

// Names the generator and the shape; a cached store with another tag is generated again (bump the
// leading version when the generator or the schema changes).
std::string ShapeTag(const GraphShape& s) {
  return "v3 " + std::to_string(s.families) + " " + std::to_string(s.tasks_per_family) + " " +
         std::to_string(s.runs_per_task) + " " + std::to_string(s.attempts_per_run) + " " +
         std::to_string(s.insights) + " " + std::to_string(s.seed);
}

std::unique_ptr<GraphStore> CachedStore(const Options& options, const GraphShape& shape) {
  const std::filesystem::path tag_file = options.store.string() + ".shape";
  std::string tag;
  std::ifstream(tag_file) >> std::noskipws >> tag;
  {
    std::ifstream in(tag_file);
    std::getline(in, tag);
  }
  if (options.regenerate || tag != ShapeTag(shape) || !std::filesystem::exists(options.store)) {
    for (const char* suffix : {"", "-wal", "-shm", ".shape"}) {
      RemoveRegularFile(options.store.string() + suffix);
    }
    std::fprintf(stderr, "generating %lld nodes into %s\n", static_cast<long long>(shape.Nodes()),
                 options.store.c_str());
    auto start = Clock::now();
    {
      auto store = Check(OpenSqliteStore(options.store));
      Status s = Generate(*store, shape);
      if (!s.ok()) Die(s);
    }
    double seconds = std::chrono::duration<double>(Clock::now() - start).count();
    std::printf("Generated the store in %.0f s (%.0f nodes per second).\n", seconds,
                static_cast<double>(shape.Nodes()) / seconds);
    std::ofstream(tag_file) << ShapeTag(shape) << "\n";
  }
  return Check(OpenSqliteStore(options.store));
}

void PrintStore(const StoreStats& stats) {
  const int64_t nodes =
      stats.tasks + stats.hardware + stats.runs + stats.attempts + stats.outcomes + stats.insights;
  std::printf(
      "\n## Store\n\n%lld nodes: %lld tasks, %lld hardware, %lld runs, %lld attempts, "
      "%lld outcomes, %lld insights; %lld evidence and %lld used edges; %.0f MiB on disk, "
      "%.0f bytes per attempt (all tables and indexes; sources %.0f bytes per attempt).\n",
      static_cast<long long>(nodes), static_cast<long long>(stats.tasks),
      static_cast<long long>(stats.hardware), static_cast<long long>(stats.runs),
      static_cast<long long>(stats.attempts), static_cast<long long>(stats.outcomes),
      static_cast<long long>(stats.insights), static_cast<long long>(stats.evidence_edges),
      static_cast<long long>(stats.used_edges), static_cast<double>(stats.store_bytes) / (1 << 20),
      static_cast<double>(stats.store_bytes) / static_cast<double>(stats.attempts),
      static_cast<double>(stats.source_bytes) / static_cast<double>(stats.attempts));
}

// Runs `query` 20 times to warm the caches a little, then `queries` times measured; prints its
// row.
void Measure(const RetrievalQuery& query, int queries) {
  Latency l{query.name, {}, {}, 0};
  for (int i = 0; i < 20; ++i) query.run();
  for (int i = 0; i < queries; ++i) {
    const double cpu_start = ThreadCpuMillis();
    auto start = Clock::now();
    l.results += query.run();
    l.ms.push_back(Millis(Clock::now() - start));
    l.cpu_ms.push_back(ThreadCpuMillis() - cpu_start);
  }
  PrintLatency(l);
}

void QueryBenchmark(const Options& options) {
  GraphShape shape = ShapeFor(options.scale);
  std::unique_ptr<GraphStore> store = CachedStore(options, shape);
  StoreStats stats = Check(store->Stats());
  PrintStore(stats);
  QueryArguments args(Check(CollectIds(*store)));

  std::printf(
      "\n## Retrieval latency (%d queries each, one thread, warm page cache; load average "
      "%.1f)\n\n",
      options.queries, LoadAverage());
  PrintLatencyHeader();
  for (const RetrievalQuery& query : RetrievalQueries(*store, args))
    Measure(query, options.queries);
  PrintSpace(options.store, stats.attempts);
}

}  // namespace
}  // namespace kope::memory::bench

int main(int argc, char** argv) {
  kope::memory::bench::Options options;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--store" && i + 1 < argc) {
      options.store = argv[++i];
    } else if (arg == "--regenerate") {
      options.regenerate = true;
    } else if (arg == "--insert-only") {
      options.insert_only = true;
    } else if (arg == "--skip-insert") {
      options.skip_insert = true;
    } else if (arg == "--queries" && i + 1 < argc) {
      options.queries = std::max(1, std::atoi(argv[++i]));
    } else if (arg == "--scale" && i + 1 < argc) {
      options.scale = std::clamp(std::atof(argv[++i]), 0.0001, 1.0);
    } else {
      std::fprintf(stderr,
                   "usage: %s [--store PATH] [--regenerate] [--queries N] [--scale F] "
                   "[--skip-insert]\n",
                   argv[0]);
      return 2;
    }
  }
  std::printf("# memory_bench\n");
  if (!options.skip_insert) kope::memory::bench::InsertBenchmark();
  if (!options.insert_only) kope::memory::bench::QueryBenchmark(options);
  return 0;
}
