// Reading a whole file, with the reason when it cannot be read; making a private folder.
#ifndef KOPE_BASE_FILE_H_
#define KOPE_BASE_FILE_H_

#include <filesystem>
#include <string>

#include "kope/base/status.h"

namespace kope {

// The file's bytes. NotFound "PATH: no such file" when it does not exist; IoError
// "PATH: cannot read: REASON" when it is not a regular file or reading it fails.
Result<std::string> ReadFileText(const std::filesystem::path& path);

// A new folder "PREFIX-XXXXXX" (mode 0700, a unique suffix) in `root`, or in the system temp
// folder when `root` is empty. IoError when it cannot be made. The caller removes it.
Result<std::filesystem::path> MakeTempFolder(const std::filesystem::path& root,
                                             const std::string& prefix);

}  // namespace kope

#endif  // KOPE_BASE_FILE_H_
