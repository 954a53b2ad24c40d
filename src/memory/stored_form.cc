#include "stored_form.h"

namespace kope::memory {

std::string KeyToBlob(std::string_view hex_key) {
  std::string out(hex_key.size() / 2, '\0');
  auto nibble = [](char c) { return c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10; };
  for (size_t i = 0; i < out.size(); ++i) {
    out[i] = static_cast<char>((nibble(hex_key[2 * i]) << 4) | nibble(hex_key[2 * i + 1]));
  }
  return out;
}

std::string BlobToKey(std::string_view blob) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(blob.size() * 2);
  for (unsigned char c : blob) {
    out.push_back(kHex[c >> 4]);
    out.push_back(kHex[c & 0xf]);
  }
  return out;
}

std::vector<std::string> SplitClasses(std::string_view joined) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start < joined.size()) {
    size_t end = joined.find(' ', start);
    if (end == std::string_view::npos) end = joined.size();
    if (end > start) out.emplace_back(joined.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

std::string JoinClasses(const std::vector<std::string>& classes) {
  std::string out;
  for (const std::string& c : classes) {
    if (!out.empty()) out += ' ';
    out += c;
  }
  return out;
}

}  // namespace kope::memory
