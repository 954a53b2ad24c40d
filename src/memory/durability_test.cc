// Durability: writers killed with SIGKILL at random moments lose no acknowledged write and leave
// a consistent store; several processes write to one store at once.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <random>
#include <string>
#include <vector>

#include "test_graph.h"

namespace kope::memory {
namespace {

using testing::TempDir;
using testing::ValueOrDie;

// A running memory_test_writer whose stdout (the acknowledgements) comes through a pipe.
class WriterProcess {
 public:
  WriterProcess(const std::filesystem::path& store, long first, long count) {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0) std::abort();
    pid_ = ::fork();
    if (pid_ == 0) {
      ::dup2(fds[1], STDOUT_FILENO);
      std::string first_text = std::to_string(first), count_text = std::to_string(count);
      ::execl(KOPE_MEMORY_TEST_WRITER, KOPE_MEMORY_TEST_WRITER, store.c_str(), first_text.c_str(),
              count_text.c_str(), static_cast<char*>(nullptr));
      ::_exit(127);
    }
    ::close(fds[1]);
    fd_ = fds[0];
  }
  ~WriterProcess() {
    if (fd_ >= 0) ::close(fd_);
  }

  // Reads acknowledgements until the pipe closes or `deadline` passes (then SIGKILL, and the
  // rest of the pipe is still read: those writes were acknowledged before the kill).
  void Collect(std::chrono::steady_clock::time_point deadline, std::vector<std::string>* acks) {
    bool killed = false;
    while (true) {
      if (!killed && std::chrono::steady_clock::now() >= deadline) {
        ::kill(pid_, SIGKILL);
        killed = true;
      }
      int timeout_ms = -1;
      if (!killed) {
        auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
            deadline - std::chrono::steady_clock::now());
        timeout_ms = static_cast<int>(std::max<int64_t>(0, left.count()));
      }
      pollfd p{fd_, POLLIN, 0};
      int ready = ::poll(&p, 1, timeout_ms);
      if (ready == 0 && !killed) {
        ::kill(pid_, SIGKILL);
        killed = true;
        continue;
      }
      char buffer[4096];
      ssize_t n = ::read(fd_, buffer, sizeof(buffer));
      if (n <= 0) break;
      pending_.append(buffer, static_cast<size_t>(n));
      size_t newline;
      while ((newline = pending_.find('\n')) != std::string::npos) {
        acks->push_back(pending_.substr(0, newline));
        pending_.erase(0, newline + 1);
      }
    }
    // A partial last line was cut by the kill: not acknowledged.
    int status = 0;
    ::waitpid(pid_, &status, 0);
    killed_ = WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL;
    exit_code_ = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }

  bool killed() const { return killed_; }
  int exit_code() const { return exit_code_; }

 private:
  pid_t pid_ = -1;
  int fd_ = -1;
  std::string pending_;
  bool killed_ = false;
  int exit_code_ = -1;
};

void ExpectAllAcknowledgedPresent(GraphStore& store, const std::vector<std::string>& acks) {
  for (const std::string& key : acks) {
    auto id = store.FindByKey(NodeKind::kAttempt, key);
    ASSERT_TRUE(id.ok()) << "acknowledged write " << key
                         << " is missing: " << id.status().ToString();
    EXPECT_EQ(ValueOrDie(store.Outcomes(*id)).size(), 1u) << key;
  }
}

TEST(DurabilityTest, SigkilledWritersLoseNoAcknowledgedWrite) {
  TempDir dir;
  std::filesystem::path store_path = dir / "experience.db";
  std::mt19937 rng(20260101);
  std::uniform_int_distribution<int> delay_ms(0, 150);
  constexpr int kRounds = 50;
  std::vector<std::string> acks;
  int killed_rounds = 0;
  for (int round = 0; round < kRounds; ++round) {
    WriterProcess writer(store_path, round * 1000000L, 1000000L);
    auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(delay_ms(rng));
    size_t before = acks.size();
    writer.Collect(deadline, &acks);
    killed_rounds += writer.killed() ? 1 : 0;
    ASSERT_TRUE(writer.killed() || writer.exit_code() == 0)
        << "round " << round << ": the writer failed with exit code " << writer.exit_code();
    (void)before;
  }
  EXPECT_EQ(killed_rounds, kRounds);
  EXPECT_GT(acks.size(), 0u) << "no writer got as far as a commit";
  auto store = testing::OpenOrDie(store_path);
  ExpectAllAcknowledgedPresent(*store, acks);
  KOPE_ASSERT_OK(store->CheckIntegrity());
  StoreStats stats = ValueOrDie(store->Stats());
  EXPECT_GE(stats.attempts, static_cast<int64_t>(acks.size()));
  EXPECT_EQ(stats.attempts, stats.outcomes);  // each write is an attempt with its outcome, or none
  std::printf("%zu acknowledged writes over %d killed writers; %lld attempts stored\n", acks.size(),
              kRounds, static_cast<long long>(stats.attempts));
}

TEST(DurabilityTest, TwoProcessesWriteOneStoreAtOnce) {
  TempDir dir;
  std::filesystem::path store_path = dir / "experience.db";  // both race to create it
  constexpr long kWrites = 150;
  WriterProcess a(store_path, 0, kWrites);
  WriterProcess b(store_path, 1000000, kWrites);
  std::vector<std::string> acks_a, acks_b;
  auto never = std::chrono::steady_clock::now() + std::chrono::hours(1);
  a.Collect(never, &acks_a);
  b.Collect(never, &acks_b);
  EXPECT_EQ(a.exit_code(), 0);
  EXPECT_EQ(b.exit_code(), 0);
  EXPECT_EQ(acks_a.size(), static_cast<size_t>(kWrites));
  EXPECT_EQ(acks_b.size(), static_cast<size_t>(kWrites));
  auto store = testing::OpenOrDie(store_path);
  ExpectAllAcknowledgedPresent(*store, acks_a);
  ExpectAllAcknowledgedPresent(*store, acks_b);
  StoreStats stats = ValueOrDie(store->Stats());
  EXPECT_EQ(stats.tasks, 1);
  EXPECT_EQ(stats.runs, 2);
  EXPECT_EQ(stats.attempts, 2 * kWrites);
  KOPE_ASSERT_OK(store->CheckIntegrity());
}

}  // namespace
}  // namespace kope::memory
