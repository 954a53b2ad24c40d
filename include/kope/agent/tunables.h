// Tunables: the numbers a kernel leaves open, declared in its source, for the tuner to sweep.
//
// A kernel declares a tunable by ending the line that defines it with a `kope:tune` comment
// that lists the values to try:
//
//   #define TILE 64                       // kope:tune 16 32 64 128
//   constexpr int kThreads = 1;           // kope:tune 1 2 4
//   static constexpr int64_t kBlock = 4096;  // kope:tune 1024 2048 4096 8192
//
// The line must be a `#define NAME VALUE` or a declaration `... NAME = VALUE;` that contains
// `const` or `constexpr`. Values are tokens of letters, digits, '_', '.', '+' and '-' (numbers,
// or names such as `true`), separated by spaces or commas, at most 32 per tunable; names are
// unique, at most 16 tunables per file. The list's order defines the neighbours the tuner steps
// between (the values next to the current one). A current value missing from the list is added
// to it: in numeric order when every value is an integer and the list is sorted, else first.
// An annotation that breaks a rule is reported in `problems` and ignored; the rest of the file
// still counts. A line that is only a comment (prose mentioning kope:tune) is not an annotation.
//
// Python sources (a ModelNew module, e.g. a Triton kernel's launcher; a source reads as Python
// when a line starts with `import `, `from NAME import`, `def ` or `@`) use `#` comments:
//
//   BLOCK = 1024                              # kope:tune 256 512 1024 2048
//   def k(x_ptr, n, BLOCK: tl.constexpr = 128):  # kope:tune 64 128 256
//   kernel[grid](x, y, n, BLOCK_SIZE=1024)    # kope:tune 256 512 1024
//   # kope:tune BLOCK_M = 32, 64, 128
//   # kope:tune BLOCK_N = 32, 64, 128
//   matmul[grid](a, b, c, BLOCK_M=64, BLOCK_N=64)
//
// At the end of a line, the comment annotates the line's one assignment of a value (`NAME =
// VALUE`, an annotated `NAME: TYPE = VALUE` such as a constexpr parameter's default, or a
// keyword argument `NAME=VALUE`; the value followed by the end of the code or `,)]};`), or, in
// the named form `# kope:tune NAME = V1, V2`, the assignment of NAME on the line. On a line of
// its own, only the named form is an annotation, of NAME's assignment on the next line of code
// (comment lines between are skipped, so several can stack). `// kope:tune` lines inside a
// Python file (C++ or CUDA source in a string, for load_inline) follow the C rules.
//
// Pure functions; thread-safe.
#ifndef KOPE_AGENT_TUNABLES_H_
#define KOPE_AGENT_TUNABLES_H_

#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kope/base/status.h"

namespace kope::agent {

struct Tunable {
  std::string name;
  std::string value;                // the current value, as written
  std::vector<std::string> values;  // the values to try, in the annotation's order
  int line = 0;                     // 1-based line of the declaration
  size_t value_offset = 0;          // byte range of the current value in the source
  size_t value_length = 0;
};

struct TunableScan {
  std::vector<Tunable> tunables;      // in source order
  std::vector<std::string> problems;  // "line 12: ..." for each ignored annotation
};

// True when the source mentions `kope:tune` at all (a quick filter before FindTunables).
bool MentionsTunables(std::string_view source);

TunableScan FindTunables(std::string_view source);

// A choice of values by tunable name.
using TuningPoint = std::map<std::string, std::string, std::less<>>;

// The current values of `tunables`.
TuningPoint CurrentPoint(const std::vector<Tunable>& tunables);

// "kBlock=4096 kThreads=2": name=value pairs sorted by name.
std::string FormatPoint(const TuningPoint& point);

// The source with the tunables named in `point` set to the given values (the annotations stay,
// so the result can be tuned again). InvalidArgument for a name the source does not declare or
// a value not in the tunable's list.
Result<std::string> ApplyPoint(std::string_view source, const TuningPoint& point);

// One step of the tuner: a tunable moved to the value next to its current one.
struct TuningMove {
  std::string name;
  std::string from;
  std::string to;
  // +1 towards the end of the value list, -1 towards its start.
  int list_direction = 0;
  // +1 when `to` is numerically larger than `from`, -1 smaller, 0 when either is not a number.
  int numeric_direction = 0;
};

// Every single-tunable step from the current values, tunables in source order, the step towards
// the end of the list before the step towards its start.
std::vector<TuningMove> NeighbourMoves(const std::vector<Tunable>& tunables);

// Recognizes a tuner's decision text ("tune NAME FROM -> TO"), so that a later step can continue
// in the direction that helped.
std::string DescribeMove(const TuningMove& move);
std::optional<TuningMove> ParseMoveDescription(std::string_view decision);

}  // namespace kope::agent

#endif  // KOPE_AGENT_TUNABLES_H_
