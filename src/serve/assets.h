// The web view's files (src/serve/assets/), built into the binary by embed_assets.cmake.
#ifndef KOPE_SRC_SERVE_ASSETS_H_
#define KOPE_SRC_SERVE_ASSETS_H_

#include <string_view>

namespace kope::serve::internal {

struct Asset {
  std::string_view name;  // the file's name, e.g. "app.js"
  std::string_view body;
};

// The asset with this file name, or nullptr.
const Asset* FindAsset(std::string_view name);

// "text/html; charset=utf-8", "text/javascript", ... by the name's extension.
std::string_view ContentTypeFor(std::string_view name);

}  // namespace kope::serve::internal

#endif  // KOPE_SRC_SERVE_ASSETS_H_
