// Reading a whole file, with the reason when it cannot be read.
#ifndef KOPE_BASE_FILE_H_
#define KOPE_BASE_FILE_H_

#include <filesystem>
#include <string>

#include "kope/base/status.h"

namespace kope {

// The file's bytes. NotFound "PATH: no such file" when it does not exist; IoError
// "PATH: cannot read: REASON" when it is not a regular file or reading it fails.
Result<std::string> ReadFileText(const std::filesystem::path& path);

}  // namespace kope

#endif  // KOPE_BASE_FILE_H_
