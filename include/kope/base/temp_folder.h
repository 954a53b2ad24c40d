// TempFolder: a private scratch folder that its owner removes when done, and that any later
// kope process removes when the owner was killed before it could.
//
// The folder holds a lock file ("owner.lock") that the owner keeps locked (flock) for as long
// as the TempFolder lives; the lock goes with the owner's process, however it ends. The file
// names its owner: "kope-temp-folder-owner pid=PID start=TICKS" (the start time from
// /proc/PID/stat, so that a reused PID is not taken for the owner). Creating a folder of a
// prefix first removes the folders of that prefix, in the same place, whose owner is gone: the
// lock can be taken and the process the file names is gone (exited, a zombie, or its PID taken
// by another). Both must say so: the lock answers across PID namespaces (a container that
// shares /tmp), where a PID would not tell, and the PID where a file system's locks would not.
// Only folders TempFolder made are candidates: named "PREFIX-" and six letters or digits,
// holding an owner file. A folder being created is never taken for an abandoned one (its lock
// file is locked and written before it gets its name). Move-only; not thread-safe.
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

// Removes the TempFolders "PREFIX-XXXXXX" directly in `root` (the system temp folder when
// empty) whose owner is gone; returns how many it removed.
int RemoveAbandonedTempFolders(const std::filesystem::path& root, const std::string& prefix);

}  // namespace kope

#endif  // KOPE_BASE_TEMP_FOLDER_H_
