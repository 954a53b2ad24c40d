// Test support: temporary folders and a small, known experience graph.
#ifndef KOPE_SRC_MEMORY_TEST_GRAPH_H_
#define KOPE_SRC_MEMORY_TEST_GRAPH_H_

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <string>

#include "kope/memory/graph_store.h"
#include "kope/memory/record.h"
#include "kope/memory/sqlite/sqlite_store.h"
#include "kope/memory/store_location.h"

namespace kope::memory::testing {

// A fresh folder, removed (with its contents) at destruction.
class TempDir {
 public:
  TempDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "kope-memory-XXXXXX").string();
    char* made = ::mkdtemp(pattern.data());
    if (made == nullptr) std::abort();
    path_ = made;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::permissions(path_, std::filesystem::perms::owner_all,
                                 std::filesystem::perm_options::add, ec);
    std::filesystem::remove_all(path_, ec);
  }
  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path operator/(const std::string& name) const { return path_ / name; }

 private:
  std::filesystem::path path_;
};

inline void WriteBytes(const std::filesystem::path& file, const std::string& bytes) {
  std::ofstream out(file, std::ios::binary | std::ios::trunc);
  out << bytes;
}

inline std::unique_ptr<GraphStore> OpenOrDie(const std::filesystem::path& path) {
  auto store = OpenSqliteStore(path);
  EXPECT_TRUE(store.ok()) << store.status().ToString();
  if (!store.ok()) std::abort();
  return std::move(store).value();
}

// Opens a store by its location (a file path or a PostgreSQL URL), as OpenStore does.
inline std::unique_ptr<GraphStore> OpenLocationOrDie(const std::string& location) {
  auto store = OpenStore(location);
  EXPECT_TRUE(store.ok()) << store.status().ToString();
  if (!store.ok()) std::abort();
  return std::move(store).value();
}

#define KOPE_ASSERT_OK(expr)                                             \
  do {                                                                   \
    const ::kope::Status kope_test_status_ = (expr);                     \
    ASSERT_TRUE(kope_test_status_.ok()) << kope_test_status_.ToString(); \
  } while (0)

template <typename T>
T ValueOrDie(Result<T> result) {
  EXPECT_TRUE(result.ok()) << result.status().ToString();
  if (!result.ok()) std::abort();
  return std::move(result).value();
}

inline TaskNode MakeTask(std::string name, std::string family, double size,
                         std::string description = "") {
  TaskNode t;
  t.name = std::move(name);
  t.op_family = std::move(family);
  t.size = size;
  t.description = std::move(description);
  return t;
}

inline HardwareNode MakeHardware(std::string backend, std::string device, std::string arch) {
  HardwareNode h;
  h.backend = std::move(backend);
  h.device = std::move(device);
  h.arch = std::move(arch);
  return h;
}

// A kernel source of `lines` lines whose line `changed` says `variant`.
inline std::string KernelSource(int lines, int changed, const std::string& variant) {
  std::string s = "#include \"kope/kernel.h\"\n";
  for (int i = 0; i < lines; ++i) {
    s += i == changed ? "  // " + variant + "\n" : "  x[" + std::to_string(i) + "] += 1;\n";
  }
  return s;
}

inline OutcomeNode Valid(double speedup) {
  OutcomeNode o;
  o.verdict = "valid";
  o.speedup = speedup;
  o.time_ms = 10.0 / speedup;
  o.roofline = 0.1 * speedup;
  o.evidence_json = "{\"median_ms\":" + std::to_string(10.0 / speedup) + "}";
  return o;
}

inline OutcomeNode Failed(std::string verdict, std::string error) {
  OutcomeNode o;
  o.verdict = std::move(verdict);
  o.error_message = std::move(error);
  return o;
}

inline BestQuery Best(NodeId task, std::string family, NodeId hardware, int limit = 10) {
  BestQuery q;
  q.task_id = task;
  q.op_family = std::move(family);
  q.hardware_id = hardware;
  q.limit = limit;
  return q;
}

inline SearchQuery Words(std::string text, std::vector<SearchKind> kinds = {},
                         std::string family = "", bool match_all = true, int limit = 20) {
  SearchQuery q;
  q.text = std::move(text);
  q.kinds = std::move(kinds);
  q.op_family = std::move(family);
  q.match_all = match_all;
  q.limit = limit;
  return q;
}

inline InsightQuery InFamily(std::string family) {
  InsightQuery q;
  q.op_family = std::move(family);
  return q;
}

inline InsightScope Scope(std::string family, std::string backend = "", std::string device = "",
                          std::string arch = "") {
  InsightScope s;
  s.op_family = std::move(family);
  s.backend = std::move(backend);
  s.device = std::move(device);
  s.arch = std::move(arch);
  return s;
}

}  // namespace kope::memory::testing

#endif  // KOPE_SRC_MEMORY_TEST_GRAPH_H_
