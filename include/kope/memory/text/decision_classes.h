// Decision classes: a small vocabulary that lets evidence add up across tasks.
//
// A decision's text is free-form; equal ideas are recognized as equal by tagging every attempt
// with one or more classes (MEMORY.md). ClassifyDecision applies keyword rules to the decision
// text (case-insensitive, words matched at word starts, so "vectorized" matches "vectoriz") and
// to code (case-sensitive tokens such as `#pragma omp`, `__m256`, `float4`, `__shfl_xor_sync`).
// Pass the lines a change added as `code` when the attempt has a parent, so that a class is the
// change's and not its ancestors'. The rules are listed in decision_classes.cc and
// docs/MEMORY_MODEL.md. Pure functions, thread-safe.
#ifndef KOPE_MEMORY_TEXT_DECISION_CLASSES_H_
#define KOPE_MEMORY_TEXT_DECISION_CLASSES_H_

#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace kope::memory {

// The vocabulary, in a fixed order.
std::span<const std::string_view> DecisionClassVocabulary();
bool IsDecisionClass(std::string_view name);

// The classes whose rules match, sorted and unique.
std::vector<std::string> ClassifyDecision(std::string_view decision, std::string_view code);

// Sorted, unique union of two class lists.
std::vector<std::string> MergeClasses(std::vector<std::string> a,
                                      const std::vector<std::string>& b);

}  // namespace kope::memory

#endif  // KOPE_MEMORY_TEXT_DECISION_CLASSES_H_
