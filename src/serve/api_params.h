// Reading an API request's path ids and query parameters: strict parsing, so that a malformed
// value is an InvalidArgument (a 400) instead of a silent default.
#ifndef KOPE_SRC_SERVE_API_PARAMS_H_
#define KOPE_SRC_SERVE_API_PARAMS_H_

#include <map>
#include <string>
#include <string_view>

#include "kope/base/status.h"
#include "kope/memory/model.h"

namespace kope::serve::internal {

class Params {
 public:
  explicit Params(const std::map<std::string, std::string>& values) : values_(values) {}

  bool Has(std::string_view name) const { return values_.count(std::string(name)) > 0; }
  std::string Text(std::string_view name, std::string fallback = "") const;
  // A decimal integer in [min, max]; `fallback` when absent.
  Result<int64_t> Int(std::string_view name, int64_t fallback, int64_t min, int64_t max) const;
  // "true"/"1" or "false"/"0"; `fallback` when absent.
  Result<bool> Bool(std::string_view name, bool fallback) const;
  // A date "YYYY-MM-DD" (UTC midnight) or milliseconds since the epoch; 0 when absent.
  Result<memory::UnixMillis> Date(std::string_view name) const;

 private:
  const std::map<std::string, std::string>& values_;
};

// A node id from a path segment: "42", or a typed ref of `kind` ("a42", "attempt:42").
Result<memory::NodeId> ParseId(std::string_view segment, memory::NodeKind kind);

// Milliseconds of UTC midnight of a "YYYY-MM-DD" date.
Result<memory::UnixMillis> ParseDate(std::string_view text);

}  // namespace kope::serve::internal

#endif  // KOPE_SRC_SERVE_API_PARAMS_H_
