// A pack file: the experience graph of a pack build in kope's exchange format (JSON lines,
// memory/exchange.h), whose header also carries the pack: its name, what it holds kernel by
// kernel, and the content hash of every line after the header.
//
//   {"type":"header","format":"kope-experience","version":1,...,
//    "pack":{"name":...,"description":...,"built_at":...,"kernels":[{"spec":{KernelSpec},
//            "source":HASH,"outcomes":N,"valid":N}]},
//    "content_hash":HASH}
//
// `kope memory import` reads it as any export (ImportJsonlFile checks the content hash);
// ReadPackFile also checks the pack: a header without a pack is InvalidArgument ("an experience
// export, not a pack"); a body whose hash differs is Corruption ("damaged"); a kernel whose source
// or runs the file does not hold is InvalidArgument ("mismatched"), each naming the file.
// Thread safety: as GraphStore's for WritePackFile; ReadPackFile is thread-safe.
#ifndef KOPE_PACK_PACK_FILE_H_
#define KOPE_PACK_PACK_FILE_H_

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "kope/base/status.h"
#include "kope/memory/exchange.h"
#include "kope/memory/graph_store.h"
#include "kope/pack/manifest.h"

namespace kope::pack {

struct PackFileKernel {
  KernelSpec spec;
  std::string source_hash;
  int outcomes = 0;  // evaluations recorded in the pack
  int valid = 0;     // of which valid
};

struct PackFileInfo {
  std::string name;
  std::string description;
  int64_t built_at = 0;  // unix milliseconds
  std::string content_hash;
  std::vector<PackFileKernel> kernels;
  std::map<std::string, int64_t> records;  // by record type
  std::vector<std::string> hardware;       // "cpu <device>" of every hardware record
};

// Exports all of `store` to `file` (replaced atomically) with the pack header.
Result<memory::ExchangeReport> WritePackFile(memory::GraphStore& store, const PackFileInfo& info,
                                             const std::filesystem::path& file);

// Reads and checks a pack file (above); the result's records and hardware are from the body.
Result<PackFileInfo> ReadPackFile(const std::filesystem::path& file);

// Whether the file's first line is a header with a pack (false when it cannot be read).
bool IsPackFile(const std::filesystem::path& file);

}  // namespace kope::pack

#endif  // KOPE_PACK_PACK_FILE_H_
