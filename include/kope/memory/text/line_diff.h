// Line diffs between two versions of a kernel's source.
//
// UnifiedDiff computes a shortest line edit script (Myers' O(ND) algorithm after trimming the
// common head and tail) and prints it as a unified diff with `context` lines around each change
// ("--- a/<name>", "+++ b/<name>", "@@ -l,s +l,s @@" hunks). Equal inputs give "". When the
// edit distance exceeds `max_edit_distance` lines the script is not minimized: the differing middle
// is shown as removed and re-added, so that cost and memory stay bounded. A last line without a
// newline is marked "\ No newline at end of file", as diff(1) does. Pure, thread-safe.
#ifndef KOPE_MEMORY_TEXT_LINE_DIFF_H_
#define KOPE_MEMORY_TEXT_LINE_DIFF_H_

#include <string>
#include <string_view>

namespace kope::memory {

struct DiffOptions {
  int context = 3;
  int max_edit_distance = 2000;
  std::string_view old_name = "parent";
  std::string_view new_name = "attempt";
};

std::string UnifiedDiff(std::string_view old_text, std::string_view new_text,
                        const DiffOptions& options = {});

// The added lines of a unified diff ('+' lines other than the "+++" header), without the '+',
// joined with newlines.
std::string AddedLines(std::string_view unified_diff);

}  // namespace kope::memory

#endif  // KOPE_MEMORY_TEXT_LINE_DIFF_H_
