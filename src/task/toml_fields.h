// Reading typed fields out of a toml++ table with field paths in the errors.
// Private to the task component: toml++ types never appear in public headers.
//
// Every error is an InvalidArgument Status whose message starts with the field
// path (`inputs[1].shape[0]: ...`); LoadTask puts the file name in front.
#ifndef KOPE_SRC_TASK_TOML_FIELDS_H_
#define KOPE_SRC_TASK_TOML_FIELDS_H_

#include <toml++/toml.h>

#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>

#include "kope/base/status.h"
#include "kope/task/expr.h"

namespace kope::task_internal {

// "tolerance" + "rtol" -> "tolerance.rtol"; "" + "name" -> "name".
std::string FieldPath(const std::string& parent, std::string_view key);
// "inputs" + 1 -> "inputs[1]".
std::string IndexPath(const std::string& parent, size_t index);

// "<path>: <what>" as InvalidArgument.
Status FieldError(const std::string& path, const std::string& what);

// "string", "integer", "table", ... for messages.
std::string_view TypeName(const toml::node& node);

// An error for the first key of `table` (at `path`) not in `allowed`,
// suggesting the nearest allowed key when one is close.
Status CheckKeys(const toml::table& table, const std::string& path,
                 std::initializer_list<std::string_view> allowed);

// Typed views of one node; `path` names it in errors.
Result<std::string> AsString(const toml::node& node, const std::string& path);
Result<int64_t> AsInteger(const toml::node& node, const std::string& path);
// A finite integer or float.
Result<double> AsNumber(const toml::node& node, const std::string& path);
Result<const toml::table*> AsTable(const toml::node& node, const std::string& path);
Result<const toml::array*> AsArray(const toml::node& node, const std::string& path);

// `table[key]` or a "missing required field" error.
Result<const toml::node*> Required(const toml::table& table, const std::string& parent,
                                   std::string_view key);

// An integer (a constant) or a string (an expression of the sizes).
Result<Expr> ReadExpr(const toml::node& node, const std::string& path);

// Letters, digits and '_', not starting with a digit.
bool IsIdentifier(std::string_view s);
// An identifier that is no C or C++ keyword.
bool IsCIdentifier(std::string_view s);

}  // namespace kope::task_internal

#endif  // KOPE_SRC_TASK_TOML_FIELDS_H_
