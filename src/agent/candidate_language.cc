#include "kope/agent/candidate_language.h"

#include <fmt/format.h>

#include "kope/llm/proposal.h"

namespace kope::agent {
namespace {

bool IsLanguage(std::string_view name) {
  return name == "cpp" || name == "cuda" || name == "triton" || name == "torch";
}

bool UsesTriton(std::string_view source) {
  for (std::string_view mark :
       {"import triton", "from triton", "@triton.jit", "@triton.autotune"}) {
    if (source.find(mark) != std::string_view::npos) return true;
  }
  return false;
}

}  // namespace

std::string NativeLanguage(std::string_view backend) { return backend == "cuda" ? "cuda" : "cpp"; }

bool IsModelNewLanguage(std::string_view language) {
  return language == "triton" || language == "torch";
}

Result<std::string> ResolveLanguageChoice(std::string_view requested, std::string_view native,
                                          const Task& task) {
  if (requested.empty() || requested == native) return std::string();
  if (requested != kAlternateLanguages && !IsLanguage(requested)) {
    return Status::InvalidArgument(fmt::format(
        "unknown candidate language '{}' (expected cpp, cuda, triton, torch or alternate)",
        requested));
  }
  if (requested == "cpp" || requested == "cuda") {
    return Status::InvalidArgument(fmt::format(
        "--language {} writes native kernels for the {} backend, and this run is on "
        "the {} backend (choose it with --backend)",
        requested, requested == "cuda" ? "cuda" : "cpu", native == "cuda" ? "cuda" : "cpu"));
  }
  if (!task.torch) {
    return Status::InvalidArgument(fmt::format(
        "--language {} proposes ModelNew modules, which need a PyTorch problem to stand in for, "
        "and task {} has no PyTorch baseline (a KernelBench problem file or an imported task "
        "has one); use --language {} for it",
        requested, task.name, native));
  }
  return std::string(requested);
}

std::vector<std::string> LanguagesOf(std::string_view choice, std::string_view native) {
  if (choice.empty()) return {std::string(native)};
  if (choice == kAlternateLanguages) return {std::string(native), "triton"};
  return {std::string(choice)};
}

std::string LanguageOfSource(std::string_view source, std::string_view native) {
  if (llm::FormatOfSource(source) != llm::SourceFormat::kModelNew) return std::string(native);
  return UsesTriton(source) ? "triton" : "torch";
}

std::string_view SourceExtension(std::string_view source, std::string_view native) {
  if (llm::FormatOfSource(source) == llm::SourceFormat::kModelNew) return ".py";
  return native == "cuda" ? ".cu" : ".cc";
}

std::string CandidateFileName(std::string_view source, std::string_view native, int64_t id) {
  return fmt::format("attempt_{}{}", id, SourceExtension(source, native));
}

std::string ProposerWithLanguage(std::string_view proposer, std::string_view language,
                                 std::string_view native) {
  if (language.empty() || language == native) return std::string(proposer);
  return fmt::format("{}@{}", proposer, language);
}

std::string LanguageOfProposer(std::string_view proposer, std::string_view native) {
  const size_t at = proposer.rfind('@');
  if (at != std::string_view::npos && IsLanguage(proposer.substr(at + 1))) {
    return std::string(proposer.substr(at + 1));
  }
  return std::string(native);
}

std::string_view ProposerBase(std::string_view proposer) {
  const size_t at = proposer.rfind('@');
  if (at != std::string_view::npos && IsLanguage(proposer.substr(at + 1))) {
    return proposer.substr(0, at);
  }
  return proposer;
}

}  // namespace kope::agent
