#include "kope/task/captured.h"

#include <nlohmann/json.hpp>
#include <set>

#include "kope/base/file.h"

namespace kope {
namespace {

using nlohmann::json;

std::optional<DType> SafetensorsDType(const std::string& name) {
  if (name == "F32") return KOPE_F32;
  if (name == "F64") return KOPE_F64;
  if (name == "F16") return KOPE_F16;
  if (name == "BF16") return KOPE_BF16;
  if (name == "I32") return KOPE_I32;
  if (name == "I64") return KOPE_I64;
  if (name == "BOOL") return KOPE_BOOL;
  return std::nullopt;
}

// One header entry; `data` is the file's bytes after the header.
Result<CapturedTensor> ReadEntry(const std::string& name, const json& entry, std::string_view data,
                                 const std::string& where) {
  auto bad = [&](const std::string& why) {
    return Status::InvalidArgument(where + ": tensor '" + name + "': " + why);
  };
  if (!entry.is_object() || !entry.contains("dtype") || !entry["dtype"].is_string() ||
      !entry.contains("shape") || !entry["shape"].is_array() || !entry.contains("data_offsets") ||
      !entry["data_offsets"].is_array() || entry["data_offsets"].size() != 2) {
    return bad("needs a dtype, a shape and two data_offsets");
  }
  CapturedTensor t;
  t.name = name;
  const std::optional<DType> dtype = SafetensorsDType(entry["dtype"].get<std::string>());
  if (!dtype) return bad("dtype '" + entry["dtype"].get<std::string>() + "' is not supported");
  t.dtype = *dtype;
  uint64_t count = 1;
  for (const json& d : entry["shape"]) {
    if (!d.is_number_unsigned() || d.get<uint64_t>() > (uint64_t{1} << 40)) {
      return bad("a dimension is no size");
    }
    t.shape.push_back(static_cast<int64_t>(d.get<uint64_t>()));
    count *= d.get<uint64_t>();
    if (count > (uint64_t{1} << 40)) return bad("too many elements");
  }
  const json& offsets = entry["data_offsets"];
  if (!offsets[0].is_number_unsigned() || !offsets[1].is_number_unsigned()) {
    return bad("data_offsets are no offsets");
  }
  const uint64_t begin = offsets[0].get<uint64_t>(), end = offsets[1].get<uint64_t>();
  if (begin > end || end > data.size()) return bad("its data lies outside the file");
  if (end - begin != count * DTypeSize(t.dtype)) {
    return bad("its data is " + std::to_string(end - begin) + " bytes, its shape needs " +
               std::to_string(count * DTypeSize(t.dtype)));
  }
  t.bytes.assign(data.substr(begin, end - begin));
  return t;
}

}  // namespace

Result<std::vector<CapturedTensor>> ReadSafetensors(const std::filesystem::path& file) {
  const std::string where = file.string();
  KOPE_ASSIGN_OR_RETURN(const std::string text, ReadFileText(file));
  uint64_t header_bytes = 0;
  if (text.size() < 8) return Status::InvalidArgument(where + ": not a safetensors file");
  for (int i = 7; i >= 0; --i) {
    header_bytes = header_bytes << 8 | static_cast<uint8_t>(text[static_cast<size_t>(i)]);
  }
  if (header_bytes > text.size() - 8) {
    return Status::InvalidArgument(where + ": not a safetensors file (its header is cut off)");
  }
  const json header = json::parse(text.substr(8, header_bytes), nullptr, false);
  if (!header.is_object()) {
    return Status::InvalidArgument(where + ": not a safetensors file (no JSON header)");
  }
  const std::string_view data = std::string_view(text).substr(8 + header_bytes);
  std::vector<CapturedTensor> tensors;
  for (const auto& [name, entry] : header.items()) {
    if (name == "__metadata__") continue;
    KOPE_ASSIGN_OR_RETURN(CapturedTensor t, ReadEntry(name, entry, data, where));
    tensors.push_back(std::move(t));
  }
  return tensors;
}

std::vector<CapturedTrial> CapturedTrials(const Task& task, const SizeSet& set,
                                          const std::vector<CapturedTensor>& tensors) {
  const size_t params = task.torch ? task.torch->parameters.size() : 0;
  const size_t forward = task.inputs.size() - std::min(params, task.inputs.size());
  if (forward == 0) return {};
  // The prefixes: what precedes the first forward input's name in a tensor's name.
  const std::string& first = task.inputs[0].name;
  std::set<std::string> prefixes;
  for (const CapturedTensor& t : tensors) {
    if (t.name.size() > first.size() &&
        t.name.compare(t.name.size() - first.size(), first.size(), first) == 0) {
      prefixes.insert(t.name.substr(0, t.name.size() - first.size()));
    }
  }
  std::vector<CapturedTrial> trials;
  for (const std::string& prefix : prefixes) {
    CapturedTrial trial;
    trial.label =
        prefix.empty() || prefix.back() != '.' ? prefix : prefix.substr(0, prefix.size() - 1);
    bool fits = true;
    for (size_t i = 0; i < task.inputs.size() && fits; ++i) {
      if (i >= forward) {
        trial.inputs.push_back(nullptr);
        continue;
      }
      const TensorSpec& spec = task.inputs[i];
      const CapturedTensor* found = nullptr;
      for (const CapturedTensor& t : tensors) {
        if (t.name == prefix + spec.name) found = &t;
      }
      Result<std::vector<int64_t>> shape = ResolveShape(spec, set);
      fits = found != nullptr && shape.ok() && found->dtype == spec.dtype && found->shape == *shape;
      trial.inputs.push_back(found);
    }
    if (fits) trials.push_back(std::move(trial));
  }
  return trials;
}

}  // namespace kope
