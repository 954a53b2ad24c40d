// TempFolder: a private scratch folder that its owner removes when done, and that any later
// kope process removes when the owner was killed before it could.
//
// The folder holds a lock file ("owner.lock") that the owner keeps locked (flock) for as long
// as the TempFolder lives; the lock goes with the owner's process, however it ends. Creating a
// folder of a prefix first removes the folders of that prefix, in the same place, whose lock can
// be taken, that is whose owner is gone; this works across PID namespaces (a container that
// shares /tmp), where a process ID would not tell. Folders without a lock file (of an older
// kope, or not yet complete) are left alone. Move-only; not thread-safe.
#ifndef KOPE_BASE_TEMP_FOLDER_H_
#define KOPE_BASE_TEMP_FOLDER_H_

#include <filesystem>
#include <string>

#include "kope/base/status.h"

namespace kope {

class TempFolder {
 public:
  // A new folder "PREFIX-XXXXXX" in `root` (the system temp folder when empty), locked. Also
  // removes the abandoned folders of the prefix there, once per process and place.
  static Result<TempFolder> Create(const std::filesystem::path& root, const std::string& prefix);

  TempFolder() = default;
  TempFolder(TempFolder&& other) noexcept;
  TempFolder& operator=(TempFolder&& other) noexcept;
  TempFolder(const TempFolder&) = delete;
  TempFolder& operator=(const TempFolder&) = delete;
  ~TempFolder();  // removes the folder and everything in it

  const std::filesystem::path& path() const { return path_; }
  bool empty() const { return path_.empty(); }

 private:
  void Remove();
  std::filesystem::path path_;
  int lock_fd_ = -1;
};

// Removes the folders "PREFIX-*" directly in `root` whose owner is gone (their lock file can be
// locked); returns how many it removed.
int RemoveAbandonedTempFolders(const std::filesystem::path& root, const std::string& prefix);

}  // namespace kope

#endif  // KOPE_BASE_TEMP_FOLDER_H_
