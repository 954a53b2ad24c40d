// How both stores keep keys and lists in their tables, private to the memory component: keys as
// 16 raw bytes (32 hex digits in the API), decision classes and phases as one space-separated
// text.
#ifndef KOPE_SRC_MEMORY_STORED_FORM_H_
#define KOPE_SRC_MEMORY_STORED_FORM_H_

#include <string>
#include <string_view>
#include <vector>

namespace kope::memory {

std::string KeyToBlob(std::string_view hex_key);
std::string BlobToKey(std::string_view blob);

std::vector<std::string> SplitClasses(std::string_view joined);
std::string JoinClasses(const std::vector<std::string>& classes);

}  // namespace kope::memory

#endif  // KOPE_SRC_MEMORY_STORED_FORM_H_
