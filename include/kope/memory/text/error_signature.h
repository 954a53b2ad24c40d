// Error signatures: compiler and runtime errors normalized so that recurring ones compare equal.
//
// NormalizeError keeps the lines that report an error (those containing "error", or the first
// non-empty line when none does, at most three), and replaces what varies between occurrences:
// file paths become <file>, numbers (including line and column numbers, sizes and addresses)
// become N, runs of whitespace become one space. Identifiers and quoted names stay, because they
// say what went wrong. The result is at most 240 characters; "" for empty input. Pure, thread-safe.
//
//   "/tmp/x/kernel.cu(45): error: identifier \"__shfl_down\" is undefined"
//     -> "<file>(N): error: identifier \"__shfl_down\" is undefined"
#ifndef KOPE_MEMORY_TEXT_ERROR_SIGNATURE_H_
#define KOPE_MEMORY_TEXT_ERROR_SIGNATURE_H_

#include <string>
#include <string_view>

namespace kope::memory {

std::string NormalizeError(std::string_view message);

}  // namespace kope::memory

#endif  // KOPE_MEMORY_TEXT_ERROR_SIGNATURE_H_
