#include "kope/pack/pack_file.h"

#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "kope/base/file.h"
#include "kope/base/hash.h"

namespace kope::pack {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

json PackJson(const PackFileInfo& info) {
  json kernels = json::array();
  for (const PackFileKernel& k : info.kernels) {
    kernels.push_back({{"spec", json::parse(KernelSpecJson(k.spec))},
                       {"source", k.source_hash},
                       {"outcomes", k.outcomes},
                       {"valid", k.valid}});
  }
  return {{"name", info.name},
          {"description", info.description},
          {"built_at", info.built_at},
          {"kernels", kernels}};
}

// `key`'s value where it is a string, else "" (a record read from a file can hold anything).
std::string StringField(const json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}

// `key`'s integer value (`fallback` where absent); out_of_range for any other number, which a
// conversion would not represent.
int64_t IntegerField(const json& j, const char* key, int64_t fallback) {
  auto it = j.find(key);
  if (it == j.end()) return fallback;
  if (!it->is_number_integer() || (it->is_number_unsigned() && it->get<uint64_t>() > INT64_MAX)) {
    throw json::out_of_range::create(406, std::string("'") + key + "' is no integer", &j);
  }
  return it->get<int64_t>();
}

Status ParsePack(const json& pack, const std::string& where, PackFileInfo& info) {
  try {
    info.name = pack.at("name").get<std::string>();
    info.description = pack.value("description", std::string());
    info.built_at = IntegerField(pack, "built_at", 0);
    for (const json& k : pack.at("kernels")) {
      PackFileKernel kernel;
      KOPE_ASSIGN_OR_RETURN(kernel.spec, ParseKernelSpec(k.at("spec").dump()));
      kernel.source_hash = k.at("source").get<std::string>();
      kernel.outcomes = static_cast<int>(
          std::clamp<int64_t>(IntegerField(k, "outcomes", 0), 0, std::numeric_limits<int>::max()));
      kernel.valid = static_cast<int>(
          std::clamp<int64_t>(IntegerField(k, "valid", 0), 0, std::numeric_limits<int>::max()));
      info.kernels.push_back(std::move(kernel));
    }
  } catch (const json::exception& e) {
    return Status::InvalidArgument(where + ": the pack header is malformed: " + e.what());
  }
  return Status::Ok();
}

// The header line and the rest of the file.
Status SplitFile(const fs::path& file, std::string& header, std::string& body) {
  KOPE_ASSIGN_OR_RETURN(std::string text, ReadFileText(file));
  const size_t end = text.find('\n');
  header = text.substr(0, end);
  body = end == std::string::npos ? "" : text.substr(end + 1);
  return Status::Ok();
}

// What the body holds: record counts, source hashes, the sources of pack runs' attempts.
struct BodyIndex {
  std::map<std::string, int64_t> records;
  std::set<std::string> sources;
  std::set<std::string> pack_runs;
  std::set<std::string> sources_in_pack_runs;
  std::vector<std::string> hardware;
};

void IndexRecord(const json& j, BodyIndex& index) {
  const std::string type = StringField(j, "type");
  ++index.records[type];
  if (type == "source") index.sources.insert(StringField(j, "hash"));
  if (type == "hardware") {
    index.hardware.push_back(StringField(j, "backend") + " " + StringField(j, "device"));
  }
  if (type == "run" && j.contains("config") && j["config"].contains("pack")) {
    index.pack_runs.insert(StringField(j, "key"));
  }
  if (type == "attempt" && index.pack_runs.count(StringField(j, "run")) != 0) {
    index.sources_in_pack_runs.insert(StringField(j, "source"));
  }
}

Result<BodyIndex> IndexBody(const std::string& body, const std::string& where) {
  BodyIndex index;
  std::istringstream in(body);
  std::string line;
  int64_t number = 1;
  while (std::getline(in, line)) {
    ++number;
    if (line.empty()) continue;
    json j = json::parse(line, nullptr, false);
    if (!j.is_object() || !j.contains("type") || !j["type"].is_string()) {
      return Status::InvalidArgument(where + ":" + std::to_string(number) + ": not a record");
    }
    for (const char* key : {"hash", "backend", "device", "key", "run", "source"}) {
      if (j.contains(key) && !j[key].is_string()) {
        return Status::InvalidArgument(where + ":" + std::to_string(number) +
                                       ": not a record (its '" + key + "' is not a string)");
      }
    }
    IndexRecord(j, index);
  }
  return index;
}

}  // namespace

Result<memory::ExchangeReport> WritePackFile(memory::GraphStore& store, const PackFileInfo& info,
                                             const fs::path& file) {
  std::ostringstream exported;
  KOPE_ASSIGN_OR_RETURN(memory::ExchangeReport report,
                        memory::ExportJsonl(store, memory::ExportFilter{}, exported));
  const std::string text = exported.str();
  const size_t end = text.find('\n');
  json header = json::parse(text.substr(0, end));
  const std::string body = text.substr(end + 1);
  header["pack"] = PackJson(info);
  header["content_hash"] = ContentHash(body);
  fs::path temp = file;
  temp += ".tmp-" + std::to_string(::getpid());
  {
    std::ofstream out(temp, std::ios::binary | std::ios::trunc);
    out << header.dump() << '\n' << body;
    out.flush();
    if (!out) return Status::IoError("cannot write '" + temp.string() + "'");
  }
  std::error_code ec;
  fs::rename(temp, file, ec);
  if (ec) {
    fs::remove(temp, ec);
    return Status::IoError("cannot move the pack into '" + file.string() + "'");
  }
  return report;
}

Result<PackFileInfo> ReadPackFile(const fs::path& file) {
  const std::string where = file.string();
  std::string header_line, body;
  KOPE_RETURN_IF_ERROR(SplitFile(file, header_line, body));
  json header = json::parse(header_line, nullptr, false);
  if (!header.is_object() || StringField(header, "type") != "header" ||
      StringField(header, "format") != "kope-experience") {
    return Status::InvalidArgument(where + ": not a kope pack (the first line is no header)");
  }
  if (!header.contains("pack") || !header["pack"].is_object()) {
    return Status::InvalidArgument(where + ": an experience export, not a pack (no pack header)");
  }
  PackFileInfo info;
  KOPE_RETURN_IF_ERROR(ParsePack(header["pack"], where, info));
  info.content_hash = StringField(header, "content_hash");
  if (info.content_hash.empty()) {
    return Status::InvalidArgument(where + ": the pack header has no content_hash");
  }
  if (ContentHash(body) != info.content_hash) {
    return Status::Corruption(where + ": damaged: its records do not match the content hash " +
                              info.content_hash + " in its header");
  }
  KOPE_ASSIGN_OR_RETURN(BodyIndex index, IndexBody(body, where));
  for (const PackFileKernel& k : info.kernels) {
    if (index.sources.count(k.source_hash) == 0 ||
        index.sources_in_pack_runs.count(k.source_hash) == 0) {
      return Status::InvalidArgument(where + ": mismatched: the header lists kernel '" +
                                     k.spec.name + "' (source " + k.source_hash +
                                     ") but no pack run in the file evaluated it");
    }
  }
  info.records = std::move(index.records);
  info.hardware = std::move(index.hardware);
  return info;
}

bool IsPackFile(const fs::path& file) {
  std::ifstream in(file);
  std::string line;
  if (!in || !std::getline(in, line)) return false;
  json header = json::parse(line, nullptr, false);
  return header.is_object() && StringField(header, "type") == "header" && header.contains("pack");
}

}  // namespace kope::pack
