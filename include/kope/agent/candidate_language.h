// Candidate languages: what a run's proposer writes.
//
//   cpp, cuda  a native kernel in kope's C ABI (include/kope/kernel.h), in the backend's own
//              language: cpp on the CPU backend, cuda on the CUDA backend;
//   triton     a ModelNew module (KernelBench's format: a Python file defining
//              `class ModelNew(nn.Module)` with Model's constructor and forward) whose kernels
//              are written with @triton.jit;
//   torch      a ModelNew module in PyTorch (its operations, or an extension built with
//              torch.utils.cpp_extension.load_inline).
// triton and torch need a task with a PyTorch baseline (a KernelBench problem): a ModelNew is
// evaluated against the problem's Model by the bridge. A run chooses one language, or
// "alternate": the backend's language and triton in turns (the one the run has fewer attempts
// in next, the native one on a tie). The choice is recorded in the run's configuration
// ("language"; absent for the backend's own).
//
// An attempt records its language in its proposer when it is not the backend's own:
// "llm:MODEL@triton", "tuner@torch". A candidate's evaluation name ends in ".py" exactly when its
// source is a ModelNew (llm::FormatOfSource), which is how the evaluator tells the two apart.
//
// Pure functions; thread-safe.
#ifndef KOPE_AGENT_CANDIDATE_LANGUAGE_H_
#define KOPE_AGENT_CANDIDATE_LANGUAGE_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "kope/base/status.h"
#include "kope/task/task.h"

namespace kope::agent {

inline constexpr std::string_view kAlternateLanguages = "alternate";

// "cpp" for the CPU backend's hardware name "cpu" (and anything else), "cuda" for "cuda".
std::string NativeLanguage(std::string_view backend);

// Whether `language` is written as a ModelNew module: triton and torch.
bool IsModelNewLanguage(std::string_view language);

// The run's choice, checked against the task and the backend's language (`native`): "" (the
// backend's own, also for `requested` equal to it or empty), "triton", "torch" or "alternate".
// InvalidArgument, saying why, for an unknown name, the other native language (cuda on the CPU
// backend), or a ModelNew language for a task without a PyTorch baseline.
Result<std::string> ResolveLanguageChoice(std::string_view requested, std::string_view native,
                                          const Task& task);

// The languages a resolved choice proposes in, in turn order: {native}, {triton}, {torch}, or
// {native, triton} for "alternate".
std::vector<std::string> LanguagesOf(std::string_view choice, std::string_view native);

// The language `source` is written in: a ModelNew module is "triton" when it uses Triton
// (`import triton`, `from triton`, `@triton.jit`) and "torch" otherwise; anything else `native`.
std::string LanguageOfSource(std::string_view source, std::string_view native);

// The file name a candidate is evaluated under: attempt_ID.py for a ModelNew source, else
// attempt_ID.cu for cuda and attempt_ID.cc for cpp.
std::string CandidateFileName(std::string_view source, std::string_view native, int64_t id);
// The extension of a best kernel's file: ".py", ".cu" or ".cc", as above.
std::string_view SourceExtension(std::string_view source, std::string_view native);

// `proposer`, with "@LANGUAGE" added when `language` is not `native`.
std::string ProposerWithLanguage(std::string_view proposer, std::string_view language,
                                 std::string_view native);
// The language an attempt's proposer records ("@triton", "@torch", ...), else `native`.
std::string LanguageOfProposer(std::string_view proposer, std::string_view native);
// The proposer without its language: "tuner" for "tuner@triton".
std::string_view ProposerBase(std::string_view proposer);

}  // namespace kope::agent

#endif  // KOPE_AGENT_CANDIDATE_LANGUAGE_H_
