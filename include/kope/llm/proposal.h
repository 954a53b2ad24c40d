// Parsing a model's reply into a proposal: the decision and the candidate's source.
//
// A candidate source has one of two formats (SourceFormat): a native kernel (one C++ or CUDA file
// that defines kope_kernel, include/kope/kernel.h) or a ModelNew module (one Python file that
// defines `class ModelNew(nn.Module)`, KernelBench's format, for PyTorch problems). The parser is
// told which format it expects; the rules below read "ModelNew" for "kope_kernel" and Python
// (fence language python, py, python3 or none) for C++ or CUDA in the ModelNew format, where the
// defining block is the one with `class ModelNew` at the start of a line.
//
// A well-formed reply (ReplyFormatInstructions(format) tells the model) reads:
//
//   DECISION: what changes relative to the parent kernel, and why.
//   TAGS: tiling, vectorization
//   ```cpp
//   ... one complete source file that defines kope_kernel ...
//   ```
//
// The parser is lenient where it can be and strict where it must be:
//   - the kernel is the one fenced block (``` or ~~~; language cpp, c++, cxx,
//     cc, c, cu, cuda, or none) that contains `kope_kernel`; other blocks are
//     ignored; if several contain it, the one block that defines it (the name
//     followed by a parameter list and a body) is taken, else the reply fails;
//   - the decision is the DECISION: section (also "Decision:", "**Decision:**",
//     "## Decision"), else the prose before the kernel block, else the prose
//     after it; reasoning inside <think>...</think> is dropped first;
//   - TAGS: is optional; tags are lowercased, trimmed and deduplicated;
//   - a kernel block that is not closed (a reply cut at the token limit), no
//     block at all, a kernel in another language, or no decision, is a
//     ParseFailure.
// A ParseFailure's reason is one or two sentences addressed to the model, meant
// to be fed back to it verbatim. Parsing never throws or crashes, whatever the
// bytes. Pure functions; thread-safe.
#ifndef KOPE_LLM_PROPOSAL_H_
#define KOPE_LLM_PROPOSAL_H_

#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace kope::llm {

enum class SourceFormat {
  kNativeKernel,  // C++ or CUDA, defines kope_kernel
  kModelNew,      // Python, defines class ModelNew
};

// kModelNew when `source` defines `class ModelNew` at the start of a line, else kNativeKernel.
SourceFormat FormatOfSource(std::string_view source);

struct Proposal {
  std::string decision;           // what is changed and why, trimmed
  std::string source;             // the candidate's source, without the fences
  std::string language;           // the fence's language tag, lowercased ("" when none)
  std::vector<std::string> tags;  // decision-class tags the model stated
};

struct ParseFailure {
  std::string reason;
};

using ParsedReply = std::variant<Proposal, ParseFailure>;

ParsedReply ParseProposal(std::string_view reply,
                          SourceFormat format = SourceFormat::kNativeKernel);

// The reply format, as a paragraph a prompt can include.
std::string_view ReplyFormatInstructions(SourceFormat format = SourceFormat::kNativeKernel);

}  // namespace kope::llm

#endif  // KOPE_LLM_PROPOSAL_H_
