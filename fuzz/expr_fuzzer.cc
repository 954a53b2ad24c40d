// Size and roofline expressions ("4 * (M * K + K * N + M * N)"): parsing, then evaluation with
// size values taken from the input's first bytes (extremes included, so that overflow and
// division by zero are reached).
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <map>
#include <string>

#include "kope/task/expr.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const char* const kNames[] = {"M", "N", "K", "rows", "cols", "n"};
  std::map<std::string, int64_t> sizes;
  for (const char* name : kNames) {
    int64_t value = 0;
    const size_t n = size < sizeof(value) ? size : sizeof(value);
    std::memcpy(&value, data, n);
    data += n;
    size -= n;
    sizes[name] = value;
  }
  kope::Result<kope::Expr> expr =
      kope::Expr::Parse(std::string(reinterpret_cast<const char*>(data), size));
  if (!expr.ok()) return 0;
  (void)expr->Names();
  (void)expr->Evaluate(sizes);
  (void)expr->Evaluate({{"M", 1}, {"N", 1}, {"K", 1}});
  return 0;
}
