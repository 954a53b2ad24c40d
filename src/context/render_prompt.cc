// The fixed parts of the prompt: system prompt, task, hardware, the kernel to change, the ask.
#include <fmt/format.h>

#include "kope/llm/proposal.h"
#include "kope/memory/text/decision_classes.h"
#include "kope/task/dtype.h"
#include "render.h"
#include "text.h"

namespace kope::context::internal {
namespace {

std::string Shape(const TensorSpec& spec) {
  std::string out = "[";
  for (size_t i = 0; i < spec.shape.size(); ++i) {
    out += (i == 0 ? "" : ", ") + spec.shape[i].text();
  }
  return out + "]";
}

std::string Sizes(const SizeSet& set) {
  std::string out;
  for (const auto& [name, value] : set.sizes) {
    out += (out.empty() ? "" : ", ") + name + "=" + std::to_string(value);
  }
  return out;
}

std::string Bytes(double bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int i = 0;
  while (bytes >= 1024 && i < 4) {
    bytes /= 1024;
    ++i;
  }
  return fmt::format("{:.0f} {}", bytes, units[i]);
}

std::string HardwareText(const HardwareInfo& hw) {
  std::string out = "# Hardware\n" + hw.backend;
  if (!hw.device.empty()) out += ": " + hw.device;
  if (!hw.architecture.empty()) out += ", " + hw.architecture;
  if (hw.cores > 0) out += fmt::format(", {} {}", hw.cores, hw.backend == "cuda" ? "SMs" : "cores");
  if (hw.last_level_cache_bytes > 0) {
    out += ", last-level cache " + Bytes(static_cast<double>(hw.last_level_cache_bytes));
  }
  if (hw.memory_bytes > 0) out += ", memory " + Bytes(static_cast<double>(hw.memory_bytes));
  out += "\n";
  if (hw.bandwidth_bytes_per_s > 0 || hw.peak_flops > 0) {
    out += fmt::format("Measured: {:.1f} GB/s copy bandwidth, {:.1f} GFLOP/s f32 peak\n",
                       hw.bandwidth_bytes_per_s / 1e9, hw.peak_flops / 1e9);
  }
  if (!hw.compiler.empty()) out += "Compiler: " + hw.compiler + "\n";
  return out;
}

std::string NodeHeader(const State& state) {
  if (!state.node) {
    if (state.model_new) return "# No ModelNew yet: write the first one\n";
    return state.base_source.empty() ? "# No kernel yet: write the first one\n"
                                     : "# The kernel to change: the task's baseline\n";
  }
  const memory::AttemptView& v = *state.node;
  std::optional<double> parent;
  if (state.lineage.size() >= 2 && state.lineage[state.lineage.size() - 2].outcome) {
    parent = state.lineage[state.lineage.size() - 2].outcome->speedup;
  }
  return "# The kernel to change: attempt " + ShortRef({memory::NodeKind::kAttempt, v.attempt.id}) +
         " (" + OutcomeText(v.outcome, parent, false) + ")\n";
}

std::string Fenced(std::string_view language, std::string_view code) {
  std::string out = "```" + std::string(language) + "\n" + std::string(code);
  if (!out.empty() && out.back() != '\n') out.push_back('\n');
  return out + "```\n";
}

}  // namespace

// The system prompt's account of a ModelNew module and its language.
std::string ModelNewRules(const State& state) {
  std::string out =
      "You optimize one PyTorch problem for kope by writing its ModelNew. Each reply proposes one "
      "change to the ModelNew you are given (or a first one) and the complete new Python file. "
      "kope runs it, checks its outputs against the problem's Model on fresh random inputs at "
      "several sizes, times it against Model (and torch.compile of it) on the target hardware, "
      "and records the result in an experience graph that later prompts draw on. A faster "
      "module that is wrong, or fails on any checked size, counts for nothing.\n\n"
      "The candidate is a Python file in KernelBench's format: it defines class "
      "ModelNew(nn.Module), whose constructor takes the same arguments as the problem's Model "
      "(kope builds it as ModelNew(*get_init_inputs())) and whose forward takes the same "
      "arguments as Model.forward and returns the same outputs, with the same shapes and "
      "dtypes. ModelNew must hold the same parameters as Model, in the same order and with the "
      "same shapes (kope binds its own values to them by position): create them as Model does. "
      "Keep the sizes general: the same module is checked at several sizes. Import what you use "
      "(torch, torch.nn, triton, triton.language); do not print, and do not change the inputs.\n"
      "A ModelNew has this shape:\n" +
      Fenced("python",
             "import torch\nimport torch.nn as nn\n\n\nclass ModelNew(nn.Module):\n"
             "    def __init__(self, *init_args):  # Model's constructor arguments\n"
             "        super().__init__()\n"
             "        ...  # the same parameters as Model, in the same order\n\n"
             "    def forward(self, *args):  # Model.forward's arguments\n"
             "        ...  # the same outputs as Model.forward\n") +
      "\n";
  const bool gpu = state.hardware.backend == "cuda";
  out += gpu ? "The tensors are on the GPU (cuda); PyTorch's current stream is the one timed.\n"
             : "The tensors are in host memory (the CPU).\n";
  if (state.candidate_language == "triton") {
    out +=
        "Write the computation as Triton kernels (@triton.jit functions using triton.language "
        "as tl) launched from forward; PyTorch is for allocating outputs, views and launch "
        "arithmetic.\n";
  } else {
    out +=
        "Write forward with PyTorch operations (fused, reordered or replaced by faster ones), "
        "or with kernels of your own built by torch.utils.cpp_extension.load_inline.\n";
  }
  if (state.request->task != nullptr && state.request->task->torch &&
      state.request->task->torch->forbid_torch_ops) {
    out +=
        "This task forbids PyTorch's compute operations inside ModelNew (anything beyond "
        "allocation, views, copies and fills fails): compute with your own kernels.\n";
  }
  return out + "\n" + std::string(llm::ReplyFormatInstructions(llm::SourceFormat::kModelNew));
}

// The system prompt's account of a native kernel: the compiler, the ABI and the reply format.
std::string NativeRules(const State& state) {
  std::string out =
      "You optimize one compute kernel for kope. Each reply proposes one change to the kernel you "
      "are given (or a first kernel) and the complete new source file. kope compiles it, checks "
      "its outputs against a reference on fresh random inputs at several sizes, times it against "
      "the task's baseline on the target hardware, and records the result in an experience graph "
      "that later prompts draw on. A faster kernel that is wrong, or fails on any checked size, "
      "counts for nothing.\n\n";
  if (state.language == "cuda") {
    out +=
        "The kernel is CUDA C++ compiled with nvcc for the target architecture. kope_kernel runs "
        "on the host with device pointers in the tensors; launch all work on the given stream "
        "(a cudaStream_t) and do not synchronize the device.\n\n";
  } else {
    out +=
        "The kernel is C++20 compiled with g++ -O3 -march=native -fopenmp as a shared object; "
        "OpenMP and the target's SIMD intrinsics are available. kope_kernel must be declared "
        "extern \"C\". Tensors live in host memory; the stream is null.\n\n";
  }
  out += "The kernel ABI (include/kope/kernel.h):\n" + Fenced("c", KernelAbiHeader()) + "\n";
  return out + std::string(llm::ReplyFormatInstructions());
}

std::string SystemPrompt(const State& state) {
  std::string out = state.model_new ? ModelNewRules(state) : NativeRules(state);
  if (out.back() != '\n') out.push_back('\n');
  // Tags from this vocabulary let evidence add up across tasks (decision classes).
  out += "\nTAGS that kope recognizes:";
  for (std::string_view c : memory::DecisionClassVocabulary()) out += " " + std::string(c);
  out += ".\n";
  return out;
}

std::string TaskText(const State& state) {
  std::string out = "# Task: " + state.task_name + " (op family: " + state.family + ")\n";
  if (!state.description.empty()) out += OneLine(state.description, 2000) + "\n";
  const Task* task = state.request->task;
  if (task != nullptr) {
    out += state.model_new ? "Tensors (forward's arguments, then Model's parameters), as kope "
                             "draws them:\n"
                           : "Inputs, in this order:\n";
    for (const TensorSpec& t : task->inputs) {
      out += "- " + t.name + ": " + std::string(DTypeName(t.dtype)) + " " + Shape(t) + "\n";
    }
    out += "Outputs, in this order:\n";
    for (const TensorSpec& t : task->outputs) {
      out += "- " + t.name + ": " + std::string(DTypeName(t.dtype)) + " " + Shape(t) + "\n";
    }
    out += "Timed at: " + Sizes(BenchSizes(*task, state.language)) + "\n";
    std::string checks;
    for (const SizeSet& s : task->checks) checks += (checks.empty() ? "" : "; ") + Sizes(s);
    out += "Also checked at: " + checks + "\n";
    const ToleranceSpec& tol = task->tolerance;
    std::string tolerance;
    if (tol.rtol) tolerance += fmt::format("rtol {:g}", *tol.rtol);
    if (tol.atol) tolerance += fmt::format("{}atol {:g}", tolerance.empty() ? "" : ", ", *tol.atol);
    if (tol.reduction) {
      tolerance += (tolerance.empty() ? "" : ", ") + std::string("the dtype's default scaled by ") +
                   "sqrt(" + tol.reduction->text() + ")";
    }
    out += "Tolerance: " + (tolerance.empty() ? "the dtype's default" : tolerance) + "\n";
    if (task->bytes || task->flops) {
      out += "Roofline: ";
      if (task->bytes) out += "bytes moved at least " + task->bytes->text();
      if (task->bytes && task->flops) out += ", ";
      if (task->flops) out += "flops " + task->flops->text();
      out += "\n";
    }
    if (state.model_new) {
      out += "\n# The problem (PyTorch): its Model is the reference and the baseline\n" +
             Fenced("python", state.problem_source);
    }
  } else {
    if (state.size > 0) out += "Size: about " + HumanCount(state.size) + " elements\n";
    if (state.task_attrs_json != "{}" && !state.task_attrs_json.empty()) {
      out += "Attributes: " + OneLine(state.task_attrs_json, 600) + "\n";
    }
  }
  return out + "\n" + HardwareText(state.hardware);
}

Forms KernelForms(const State& state) {
  const std::string header = "\n" + NodeHeader(state);
  if (state.base_source.empty()) return {{Fidelity::kFull, header}};
  std::string decision;
  std::string error_full;
  std::string error_short;
  if (state.node) {
    decision = "Its decision: " + OneLine(state.node->attempt.decision, 1200) + "\n";
    const auto& o = state.node->outcome;
    if (o && o->verdict != memory::kVerdictValid && !o->error_message.empty()) {
      error_full = "Its error:\n" + Fenced("", FirstLines(o->error_message, 40));
      error_short = "Its error:\n" + Fenced("", FirstLines(o->error_message, 8));
    } else if (o) {
      const std::string measured = EvidenceText(*o, true);
      if (!measured.empty()) error_full = error_short = "Measured: " + measured + "\n";
    }
  }
  const size_t lines = LineCount(state.base_source);
  Forms forms;
  forms.emplace_back(Fidelity::kFull,
                     header + decision + error_full + Fenced(state.base_fence, state.base_source));
  forms.emplace_back(Fidelity::kSummary,
                     header + decision + error_short + "An excerpt of its " +
                         std::to_string(lines) + " lines (write the whole file):\n" +
                         Fenced(state.base_fence, ExcerptCode(state.base_source, 60)));
  forms.emplace_back(Fidelity::kLine, header + OneLine(decision, 300) + "\n(Its source, " +
                                          std::to_string(lines) +
                                          " lines, is left out for lack of room.)\n");
  return forms;
}

// What the proposer is asked to write, in words.
std::string LanguageWords(const State& state) {
  if (state.candidate_language == "triton") return "a ModelNew whose kernels are Triton";
  if (state.candidate_language == "torch") return "a ModelNew in PyTorch";
  return "a native kernel (kope_kernel, " + state.language + ")";
}

std::string Closing(const State& state) {
  std::string target =
      state.node ? "attempt " + ShortRef({memory::NodeKind::kAttempt, state.node->attempt.id})
                 : std::string(state.base_source.empty() ? "nothing" : "the baseline");
  std::string out = "\n# Your step\n";
  const bool other_format = state.node && (llm::FormatOfSource(state.base_source) ==
                                           llm::SourceFormat::kModelNew) != state.model_new;
  if (other_format) {
    out += "Rewrite " + target + " as " + LanguageWords(state) +
           ", keeping what made it fast, correct at every size and fast on this hardware.";
  } else if (!state.node && state.model_new) {
    out += "Write a first ModelNew for this problem (" + LanguageWords(state) +
           ") that is correct at every size and faster than Model on this hardware.";
  } else if (state.node || !state.base_source.empty()) {
    out += "Propose one change to " + target +
           " that makes it faster on this hardware while keeping its outputs within "
           "tolerance at every size.";
  } else {
    out +=
        "Write a first kernel for this task that is correct at every size and fast on this "
        "hardware.";
  }
  out +=
      " Do not repeat an alternative already tried unless you fix what made it fail. Reply in the "
      "format the instructions give, with the complete source file.\n";
  return out;
}

std::string SectionHeading(Section section) {
  switch (section) {
    case Section::kTask:
      return "";
    case Section::kProfile:
      return "\n## Best so far on this task and hardware\n";
    case Section::kLineage:
      return "\n## How the kernel to change came to be (root first)\n";
    case Section::kAlternatives:
      return "\n## Already tried from this kernel (do not repeat these)\n";
    case Section::kInsights:
      return "\n## Lessons from earlier work in scope (strongest first)\n";
    case Section::kExemplars:
      return "\n## Exemplars: fast kernels of this and similar tasks\n";
    case Section::kFailureRules:
      return "\n## Errors seen before and how they were fixed\n";
    case Section::kHistory:
      return "\n## The episode so far (oldest first)\n";
  }
  return "";
}

}  // namespace kope::context::internal
