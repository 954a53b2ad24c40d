// Checking that a text is a JSON object, private to the memory component.
//
// The store checks every outcome's evidence (and every attrs and config) before writing it. The
// texts are small and almost always plain, so a scan that recognizes plain JSON (ASCII strings
// without escapes, short numbers without exponents, any nesting up to a depth) answers first; any
// text it does not recognize as valid goes to the full parser (nlohmann::json::accept), which
// gives the answer. The scan never accepts a text the full parser rejects.
#ifndef KOPE_SRC_MEMORY_JSON_OBJECT_H_
#define KOPE_SRC_MEMORY_JSON_OBJECT_H_

#include <string_view>

namespace kope::memory {

// True when `json` is one JSON object (leading and trailing JSON whitespace allowed).
bool IsJsonObject(std::string_view json);

// The quick scan alone: true only for plain JSON objects it fully recognized; false says
// nothing (the text may still be valid). Exposed for the tests.
bool IsPlainJsonObject(std::string_view json);

}  // namespace kope::memory

#endif  // KOPE_SRC_MEMORY_JSON_OBJECT_H_
