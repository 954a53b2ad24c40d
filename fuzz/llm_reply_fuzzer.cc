// The LLM reply parser: a model's reply is untrusted text (a decision, tags, one fenced source).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "kope/llm/proposal.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view reply(reinterpret_cast<const char*>(data), size);
  (void)kope::llm::FormatOfSource(reply);
  (void)kope::llm::ParseProposal(reply, kope::llm::SourceFormat::kNativeKernel);
  (void)kope::llm::ParseProposal(reply, kope::llm::SourceFormat::kModelNew);
  return 0;
}
