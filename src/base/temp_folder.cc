#include "kope/base/temp_folder.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstring>
#include <mutex>
#include <optional>
#include <set>
#include <sstream>

#include "kope/base/file.h"

namespace kope {
namespace fs = std::filesystem;
namespace {

constexpr char kLockName[] = "owner.lock";
constexpr char kOwnerMarker[] = "kope-temp-folder-owner";
constexpr size_t kSuffixLength = 6;  // MakeTempFolder's "XXXXXX"

fs::path Base(const fs::path& root) { return root.empty() ? fs::temp_directory_path() : root; }

// A process as /proc/PID/stat shows it: its state letter and its start time (clock ticks after
// boot). Absent when there is no such process.
struct ProcessStat {
  char state = '?';
  std::string start;
};

std::optional<ProcessStat> StatOf(const std::string& pid) {
  Result<std::string> text = ReadFileText("/proc/" + pid + "/stat");
  if (!text.ok()) return std::nullopt;
  // "PID (COMM) STATE PPID ...": COMM may hold spaces and parentheses; the fields after the
  // last ')' are plain. The start time is field 22, the 20th after the name.
  const size_t close = text->rfind(')');
  if (close == std::string::npos) return std::nullopt;
  std::istringstream fields(text->substr(close + 1));
  ProcessStat stat;
  std::string field;
  for (int i = 0; i < 20 && fields >> field; ++i) {
    if (i == 0) stat.state = field[0];
    if (i == 19) stat.start = field;
  }
  if (stat.start.empty()) return std::nullopt;
  return stat;
}

// "kope-temp-folder-owner pid=PID start=TICKS": who made the folder, for people and for the
// sweep's second opinion.
std::string OwnerRecord() {
  const std::string pid = std::to_string(getpid());
  std::optional<ProcessStat> self = StatOf(pid);
  return std::string(kOwnerMarker) + " pid=" + pid + " start=" + (self ? self->start : "?") + "\n";
}

// Whether the process an owner record names is gone: no such process, a zombie, or another
// process that has since taken its PID. Unknown records count as alive.
bool OwnerGone(const std::string& record) {
  std::istringstream in(record);
  std::string marker, pid, start;
  in >> marker >> pid >> start;
  if (marker != kOwnerMarker || pid.rfind("pid=", 0) != 0 || start.rfind("start=", 0) != 0) {
    return false;
  }
  pid = pid.substr(4);
  start = start.substr(6);
  if (pid.empty() || pid.find_first_not_of("0123456789") != std::string::npos) return false;
  std::optional<ProcessStat> stat = StatOf(pid);
  if (!stat || stat->state == 'Z' || stat->state == 'X') return true;
  return start != "?" && stat->start != start;
}

// Whether `name` is one MakeTempFolder makes for `prefix`: "PREFIX-" and six letters or digits.
bool IsFolderName(const std::string& name, const std::string& prefix) {
  if (name.size() != prefix.size() + 1 + kSuffixLength || name.rfind(prefix + "-", 0) != 0) {
    return false;
  }
  for (size_t i = prefix.size() + 1; i < name.size(); ++i) {
    if (!std::isalnum(static_cast<unsigned char>(name[i]))) return false;
  }
  return true;
}

// Whether `dir` is a TempFolder whose owner is gone: its lock file holds an owner record,
// nobody holds the lock, and the process the record names is gone.
bool Abandoned(const fs::path& dir) {
  const int fd = open((dir / kLockName).c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) return false;
  struct stat st;
  char buf[256];
  ssize_t n = -1;
  if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) n = read(fd, buf, sizeof(buf) - 1);
  const std::string record(buf, n > 0 ? static_cast<size_t>(n) : 0);
  const bool free = n > 0 && flock(fd, LOCK_EX | LOCK_NB) == 0;
  const bool gone = free && OwnerGone(record);
  close(fd);
  return gone;
}

}  // namespace

int RemoveAbandonedTempFolders(const fs::path& root, const std::string& prefix) {
  int removed = 0;
  std::error_code ec;
  for (const fs::directory_entry& e : fs::directory_iterator(Base(root), ec)) {
    if (!IsFolderName(e.path().filename().string(), prefix)) continue;
    if (!e.is_directory(ec) || e.is_symlink(ec) || !Abandoned(e.path())) continue;
    std::error_code rm;
    fs::remove_all(e.path(), rm);
    if (!rm) ++removed;
  }
  return removed;
}

Result<TempFolder> TempFolder::Create(const fs::path& root, const std::string& prefix) {
  {
    static std::mutex mu;
    static std::set<std::string> swept;
    std::lock_guard<std::mutex> lock(mu);
    if (swept.insert(Base(root).string() + "\n" + prefix).second) {
      RemoveAbandonedTempFolders(root, prefix);
    }
  }
  KOPE_ASSIGN_OR_RETURN(fs::path path, MakeTempFolder(root, prefix));
  TempFolder folder;
  folder.path_ = path;
  // Locked and written under a temporary name, then renamed: a sweeper never sees an unlocked
  // or empty lock file of a live folder.
  const fs::path staging = path / (std::string(kLockName) + ".new");
  const std::string record = OwnerRecord();
  folder.lock_fd_ = open(staging.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (folder.lock_fd_ < 0 || flock(folder.lock_fd_, LOCK_EX) != 0 ||
      write(folder.lock_fd_, record.data(), record.size()) != static_cast<ssize_t>(record.size()) ||
      rename(staging.c_str(), (path / kLockName).c_str()) != 0) {
    return Status::IoError("cannot lock " + path.string() + ": " + std::strerror(errno));
  }
  return folder;
}

TempFolder::TempFolder(TempFolder&& other) noexcept
    : path_(std::move(other.path_)), lock_fd_(other.lock_fd_) {
  other.path_.clear();
  other.lock_fd_ = -1;
}

TempFolder& TempFolder::operator=(TempFolder&& other) noexcept {
  if (this != &other) {
    Remove();
    path_ = std::move(other.path_);
    lock_fd_ = other.lock_fd_;
    other.path_.clear();
    other.lock_fd_ = -1;
  }
  return *this;
}

TempFolder::~TempFolder() { Remove(); }

void TempFolder::Remove() {
  std::error_code ec;
  if (!path_.empty()) fs::remove_all(path_, ec);
  if (lock_fd_ >= 0) close(lock_fd_);
  path_.clear();
  lock_fd_ = -1;
}

}  // namespace kope
