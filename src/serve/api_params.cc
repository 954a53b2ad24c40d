#include "api_params.h"

#include <charconv>
#include <chrono>

namespace kope::serve::internal {
namespace {

bool ParseDecimal(std::string_view text, int64_t& value) {
  if (text.empty() || text.size() > 19) return false;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, value);
  return ec == std::errc() && ptr == end;
}

}  // namespace

std::string Params::Text(std::string_view name, std::string fallback) const {
  auto it = values_.find(std::string(name));
  return it == values_.end() ? fallback : it->second;
}

Result<int64_t> Params::Int(std::string_view name, int64_t fallback, int64_t min,
                            int64_t max) const {
  auto it = values_.find(std::string(name));
  if (it == values_.end()) return fallback;
  int64_t value = 0;
  if (!ParseDecimal(it->second, value) || value < min || value > max) {
    return Status::InvalidArgument("parameter '" + std::string(name) + "' must be an integer in [" +
                                   std::to_string(min) + ", " + std::to_string(max) + "], not '" +
                                   it->second + "'");
  }
  return value;
}

Result<bool> Params::Bool(std::string_view name, bool fallback) const {
  auto it = values_.find(std::string(name));
  if (it == values_.end()) return fallback;
  if (it->second == "true" || it->second == "1") return true;
  if (it->second == "false" || it->second == "0") return false;
  return Status::InvalidArgument("parameter '" + std::string(name) +
                                 "' must be true or false, not '" + it->second + "'");
}

Result<memory::UnixMillis> Params::Date(std::string_view name) const {
  auto it = values_.find(std::string(name));
  if (it == values_.end()) return memory::UnixMillis{0};
  int64_t millis = 0;
  if (ParseDecimal(it->second, millis) && millis >= 0) return millis;
  Result<memory::UnixMillis> date = ParseDate(it->second);
  if (!date.ok()) {
    return Status::InvalidArgument("parameter '" + std::string(name) +
                                   "' must be a date YYYY-MM-DD or milliseconds since the "
                                   "epoch, not '" +
                                   it->second + "'");
  }
  return date;
}

Result<memory::NodeId> ParseId(std::string_view segment, memory::NodeKind kind) {
  int64_t id = 0;
  if (ParseDecimal(segment, id) && id > 0) return id;
  Result<memory::NodeRef> ref = memory::ParseNodeRef(segment);
  if (ref.ok() && ref->kind == kind && ref->id > 0) return ref->id;
  return Status::InvalidArgument("'" + std::string(segment) + "' is not a valid " +
                                 std::string(memory::NodeKindName(kind)) + " id");
}

Result<memory::UnixMillis> ParseDate(std::string_view text) {
  int64_t y = 0, m = 0, d = 0;
  if (text.size() != 10 || text[4] != '-' || text[7] != '-' ||
      !ParseDecimal(text.substr(0, 4), y) || !ParseDecimal(text.substr(5, 2), m) ||
      !ParseDecimal(text.substr(8, 2), d)) {
    return Status::InvalidArgument("not a date YYYY-MM-DD: " + std::string(text));
  }
  using namespace std::chrono;
  const year_month_day date{year(static_cast<int>(y)), month(static_cast<unsigned>(m)),
                            day(static_cast<unsigned>(d))};
  if (!date.ok()) return Status::InvalidArgument("not a date: " + std::string(text));
  return duration_cast<milliseconds>(sys_days(date).time_since_epoch()).count();
}

}  // namespace kope::serve::internal
