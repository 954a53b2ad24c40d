// Pack files (`kope pack list`, `kope memory import` of a pack): the header's pack, the body's
// records and the kernels' cross-references. The input is written as the file twice: as it is,
// and with the header's content_hash made right for its body where the header is a JSON object
// (a mutated body would otherwise stop at the hash check, before the body is read).
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "kope/base/hash.h"
#include "kope/pack/pack_file.h"

namespace {

void ReadAsFile(const std::string& text) {
  static const std::string path = "/tmp/kope-fuzz-pack-" + std::to_string(::getpid()) + ".jsonl";
  {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << text;
  }
  (void)kope::pack::ReadPackFile(path);
  (void)kope::pack::IsPackFile(path);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  ReadAsFile(text);
  const size_t end = text.find('\n');
  if (end == std::string::npos) return 0;
  nlohmann::json header = nlohmann::json::parse(text.substr(0, end), nullptr, false);
  if (!header.is_object()) return 0;
  const std::string body = text.substr(end + 1);
  header["content_hash"] = kope::ContentHash(body);
  ReadAsFile(header.dump() + "\n" + body);
  return 0;
}
