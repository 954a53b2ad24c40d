#include "kope/base/temp_folder.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <mutex>
#include <set>

#include "kope/base/file.h"

namespace kope {
namespace fs = std::filesystem;
namespace {

constexpr char kLockName[] = "owner.lock";

fs::path Base(const fs::path& root) { return root.empty() ? fs::temp_directory_path() : root; }

// Whether `dir` holds a lock file nobody holds: its owner is gone.
bool Abandoned(const fs::path& dir) {
  const int fd = open((dir / kLockName).c_str(), O_RDWR | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) return false;
  const bool free = flock(fd, LOCK_EX | LOCK_NB) == 0;
  close(fd);
  return free;
}

}  // namespace

int RemoveAbandonedTempFolders(const fs::path& root, const std::string& prefix) {
  int removed = 0;
  std::error_code ec;
  for (const fs::directory_entry& e : fs::directory_iterator(Base(root), ec)) {
    const std::string name = e.path().filename().string();
    if (name.rfind(prefix + "-", 0) != 0 || !e.is_directory(ec) || e.is_symlink(ec)) continue;
    if (!Abandoned(e.path())) continue;
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
  // Locked under a temporary name, then renamed: a sweeper never sees an unlocked lock file of
  // a live folder.
  const fs::path staging = path / (std::string(kLockName) + ".new");
  folder.lock_fd_ = open(staging.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (folder.lock_fd_ < 0 || flock(folder.lock_fd_, LOCK_EX) != 0 ||
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
