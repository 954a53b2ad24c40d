#include "test_stores.h"

#include <libpq-fe.h>
#include <pwd.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <mutex>
#include <thread>
#include <vector>

#include "kope/base/subprocess.h"

namespace kope::memory::testing {
namespace {

namespace fs = std::filesystem;

ProcessOptions WithTimeout(double seconds) {
  ProcessOptions options;
  options.timeout_seconds = seconds;
  return options;
}

constexpr int kPort = 5432;  // the socket is in the cluster's own folder: no clash

// The folder with initdb and postgres, or "".
fs::path FindBinaries() {
  std::vector<fs::path> candidates;
  if (const char* dir = std::getenv("KOPE_POSTGRES_BIN"); dir != nullptr && *dir != '\0') {
    candidates.emplace_back(dir);
  }
  auto config = RunProcess({"pg_config", "--bindir"}, WithTimeout(10));
  if (config.ok() && config->ok()) {
    std::string dir = config->output;
    while (!dir.empty() && (dir.back() == '\n' || dir.back() == ' ')) dir.pop_back();
    candidates.emplace_back(dir);
  }
  std::error_code ec;
  std::vector<fs::path> installed;
  for (const auto& entry : fs::directory_iterator("/usr/lib/postgresql", ec)) {
    installed.push_back(entry.path() / "bin");
  }
  std::sort(installed.rbegin(), installed.rend());  // the newest version first
  candidates.insert(candidates.end(), installed.begin(), installed.end());
  for (const fs::path& dir : candidates) {
    if (fs::exists(dir / "initdb", ec) && fs::exists(dir / "postgres", ec)) return dir;
  }
  return {};
}

// A throw-away cluster: started once, stopped by StopCluster.
class Cluster {
 public:
  // Starts the cluster on first use; "" on success, else why not.
  const std::string& Start() {
    std::call_once(started_, [this] { error_ = DoStart(); });
    return error_;
  }
  std::string Url(const std::string& database) const {
    return "postgresql:///" + database + "?host=" + dir_.string() +
           "&port=" + std::to_string(kPort) + "&user=kope";
  }
  void Stop() {
    if (pid_ > 0) {
      ::kill(pid_, SIGINT);  // fast shutdown
      int status = 0;
      ::waitpid(pid_, &status, 0);
      pid_ = -1;
    }
    if (!dir_.empty()) {
      std::error_code ec;
      fs::remove_all(dir_, ec);
      dir_.clear();
    }
  }

 private:
  // argv run as the cluster's user: through setpriv when this process is root.
  std::vector<std::string> AsClusterUser(std::vector<std::string> argv) const {
    if (::geteuid() != 0) return argv;
    std::vector<std::string> wrapped = {"/usr/bin/setpriv", "--reuid=postgres", "--regid=postgres",
                                        "--init-groups", "--pdeathsig=KILL"};
    wrapped.insert(wrapped.end(), argv.begin(), argv.end());
    return wrapped;
  }

  std::string DoStart() {
    const fs::path bin = FindBinaries();
    if (bin.empty()) {
      return "no PostgreSQL binaries (initdb, postgres) found: install postgresql-15 "
             "(scripts/setup) or set KOPE_POSTGRES_BIN";
    }
    std::string pattern = (fs::temp_directory_path() / "kope-pg-XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr) return "cannot create a folder for the cluster";
    dir_ = pattern;
    if (::geteuid() == 0) {
      struct passwd* user = ::getpwnam("postgres");
      if (user == nullptr) return "running as root and there is no 'postgres' user to run as";
      if (::chown(dir_.c_str(), user->pw_uid, user->pw_gid) != 0) return "cannot chown the folder";
    }
    const std::string data = (dir_ / "data").string();
    auto init =
        RunProcess(AsClusterUser({(bin / "initdb").string(), "-D", data, "-U", "kope",
                                  "--auth=trust", "-E", "UTF8", "--no-sync", "--no-instructions"}),
                   WithTimeout(120));
    if (!init.ok()) return "initdb did not start: " + init.status().ToString();
    if (!init->ok()) return "initdb failed: " + init->output;
    SpawnOptions spawn;
    spawn.env = {"LANG=C", "LC_ALL=C"};
    auto server = SpawnProcess(
        AsClusterUser({(bin / "postgres").string(), "-D", data, "-k", dir_.string(), "-p",
                       std::to_string(kPort), "-c", "listen_addresses=", "-c", "fsync=off", "-c",
                       "synchronous_commit=off", "-c", "full_page_writes=off", "-c",
                       "max_connections=200", "-c", "log_min_messages=fatal"}),
        spawn);
    if (!server.ok()) return "postgres did not start: " + server.status().ToString();
    pid_ = *server;
    const std::string url = Url("postgres");
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (PQping(url.c_str()) != PQPING_OK) {
      int status = 0;
      if (::waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        return "postgres exited at start (status " + std::to_string(status) + ")";
      }
      if (std::chrono::steady_clock::now() > deadline) return "postgres did not accept connections";
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return "";
  }

  std::once_flag started_;
  std::string error_;
  fs::path dir_;
  int pid_ = -1;
};

Cluster& SharedCluster() {
  static Cluster* cluster = new Cluster();
  return *cluster;
}

class ClusterEnvironment : public ::testing::Environment {
 public:
  void TearDown() override { SharedCluster().Stop(); }
};

[[maybe_unused]] ::testing::Environment* const kEnvironment =
    ::testing::AddGlobalTestEnvironment(new ClusterEnvironment);

// Runs one statement on the cluster's maintenance database; "" or the error.
std::string Admin(const std::string& sql) {
  PGconn* conn = PQconnectdb(SharedCluster().Url("postgres").c_str());
  std::string error;
  if (PQstatus(conn) != CONNECTION_OK) {
    error = PQerrorMessage(conn);
  } else {
    PGresult* result = PQexec(conn, sql.c_str());
    if (PQresultStatus(result) != PGRES_COMMAND_OK) error = PQresultErrorMessage(result);
    PQclear(result);
  }
  PQfinish(conn);
  return error;
}

}  // namespace

std::string StoreKindName(const ::testing::TestParamInfo<StoreKind>& info) {
  return info.param == StoreKind::kSqlite ? "Sqlite" : "Postgres";
}

std::string TestClusterUrl(std::string* skip_reason) {
  const std::string& error = SharedCluster().Start();
  if (!error.empty()) {
    *skip_reason = "PostgreSQL tests skipped: " + error;
    return "";
  }
  return SharedCluster().Url("postgres");
}

TestStoreLocation NewStoreLocation(StoreKind kind, const fs::path& dir, const std::string& file) {
  if (kind == StoreKind::kSqlite) return {(dir / file).string(), ""};
  TestStoreLocation out;
  std::string url = TestClusterUrl(&out.skip_reason);
  if (url.empty()) return out;
  static std::atomic<int> next{0};
  const std::string schema =
      "store_" + std::to_string(::getpid()) + "_" + std::to_string(next.fetch_add(1));
  std::string error = Admin("CREATE SCHEMA " + schema);
  if (!error.empty()) {
    out.skip_reason = "PostgreSQL tests skipped: cannot create a schema: " + error;
    return out;
  }
  out.location = url + "&options=-csearch_path%3D" + schema;
  return out;
}

}  // namespace kope::memory::testing
