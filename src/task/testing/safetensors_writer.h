// Test support: safetensors files written by hand (task/captured.h reads them), for tests of
// verification on captured inputs.
#ifndef KOPE_SRC_TASK_TESTING_SAFETENSORS_WRITER_H_
#define KOPE_SRC_TASK_TESTING_SAFETENSORS_WRITER_H_

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace kope::testing {

struct SafetensorsEntry {
  std::string name, dtype;  // dtype as safetensors spells it: "F32", "BF16", ...
  std::vector<int64_t> shape;
  std::string bytes;
};

// The bytes of a safetensors file of `tensors`; `header_edit` may change the header first.
inline std::string SafetensorsBytes(const std::vector<SafetensorsEntry>& tensors,
                                    const std::function<void(nlohmann::json&)>& header_edit = {}) {
  nlohmann::json header = {{"__metadata__", {{"format", "kope-activations-1"}}}};
  std::string data;
  for (const SafetensorsEntry& t : tensors) {
    header[t.name] = {{"dtype", t.dtype},
                      {"shape", t.shape},
                      {"data_offsets", {data.size(), data.size() + t.bytes.size()}}};
    data += t.bytes;
  }
  if (header_edit) header_edit(header);
  const std::string text = header.dump();
  std::string out(8, '\0');
  const uint64_t n = text.size();
  for (int i = 0; i < 8; ++i) out[static_cast<size_t>(i)] = static_cast<char>(n >> (8 * i) & 0xff);
  return out + text + data;
}

inline std::string FloatBytes(const std::vector<float>& v) {
  return std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(float));
}

inline void WriteBytes(const std::filesystem::path& file, const std::string& bytes) {
  std::ofstream(file, std::ios::binary | std::ios::trunc) << bytes;
}

// Names `file` (in `folder`) as the task's captured_inputs: the first line of its task.toml.
inline void NameCapturedInputs(const std::filesystem::path& folder, const std::string& file) {
  std::ifstream in(folder / "task.toml", std::ios::binary);
  const std::string toml((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  in.close();
  WriteBytes(folder / "task.toml", "captured_inputs = \"" + file + "\"\n" + toml);
}

}  // namespace kope::testing

#endif  // KOPE_SRC_TASK_TESTING_SAFETENSORS_WRITER_H_
