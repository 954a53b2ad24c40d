// The declarations a `kope:tune` annotation may name, in C/C++/CUDA and in Python: the parsers
// behind FindTunables (tunables.h). Internal to src/agent; pure functions.
#ifndef KOPE_SRC_AGENT_TUNABLE_SYNTAX_H_
#define KOPE_SRC_AGENT_TUNABLE_SYNTAX_H_

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kope::agent::internal {

// A declared name and where its value is, as offsets within the code part of one line.
struct Declaration {
  std::string name;
  size_t value_begin = 0;
  size_t value_end = 0;
};

bool IsValueChar(char c);
bool IsSpace(char c);

// `#define NAME VALUE`.
std::optional<Declaration> ParseDefine(std::string_view code);
// `... const[expr] TYPE NAME = VALUE;`
std::optional<Declaration> ParseConstant(std::string_view code);

// Every simple Python assignment of a value token in `code` (one line without its comment):
// `NAME = VALUE`, `NAME: ANNOTATION = VALUE` (a constexpr parameter's default) and a keyword
// argument `NAME=VALUE`, the value followed by the end of the code or one of `,)]};`.
// Attributes (`self.n = 1`), subscripts, augmented assignments and comparisons are none.
std::vector<Declaration> PythonAssignments(std::string_view code);

// Whether `source` reads as Python: a line that starts with `import ` (and does not end with
// `;`, as C++'s `import std;` does), `from NAME import`, `def ` or a decorator `@`.
bool LooksLikePython(std::string_view source);

// The offset of the `#` that starts a Python comment on `line` (outside single-line string
// literals), or npos.
size_t PythonCommentStart(std::string_view line);

}  // namespace kope::agent::internal

#endif  // KOPE_SRC_AGENT_TUNABLE_SYNTAX_H_
