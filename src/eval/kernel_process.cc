#include "kernel_process.h"

#include <unistd.h>

#include <atomic>
#include <cstring>

#include "kope/base/parallel.h"

namespace kope {
namespace {

constexpr size_t kAlign = 64;

size_t AlignUp(size_t n) { return (n + kAlign - 1) / kAlign * kAlign; }

std::vector<int64_t> ContiguousStrides(const std::vector<int64_t>& shape) {
  std::vector<int64_t> strides(shape.size(), 1);
  for (size_t d = shape.size(); d-- > 1;) strides[d - 1] = strides[d] * shape[d];
  return strides;
}

Result<ArenaLayout::Tensor> Describe(const TensorSpec& spec, const SizeSet& sizes) {
  KOPE_ASSIGN_OR_RETURN(std::vector<int64_t> shape, ResolveShape(spec, sizes));
  ArenaLayout::Tensor t;
  t.name = spec.name;
  t.dtype = spec.dtype;
  t.count = 1;
  for (int64_t d : shape) t.count *= static_cast<size_t>(d);
  t.shape = std::move(shape);
  t.bytes = t.count * DTypeSize(spec.dtype);
  return t;
}

TensorSlot Slot(const ArenaLayout::Tensor& t, uint64_t offset) {
  return TensorSlot{t.dtype, t.shape, ContiguousStrides(t.shape), offset};
}

}  // namespace

Result<ArenaLayout> ArenaLayout::Build(const Task& task, const SizeSet& sizes, int rotation) {
  ArenaLayout layout;
  for (const TensorSpec& spec : task.inputs) {
    KOPE_ASSIGN_OR_RETURN(Tensor t, Describe(spec, sizes));
    layout.inputs.push_back(std::move(t));
  }
  for (const TensorSpec& spec : task.outputs) {
    KOPE_ASSIGN_OR_RETURN(Tensor t, Describe(spec, sizes));
    layout.outputs.push_back(std::move(t));
  }
  size_t offset = 0;
  for (int r = 0; r < rotation; ++r) {
    std::vector<uint64_t> offsets;
    for (const Tensor& t : layout.inputs) {
      offsets.push_back(offset);
      offset += AlignUp(t.bytes);
    }
    layout.input_offsets.push_back(std::move(offsets));
  }
  for (const Tensor& t : layout.outputs) {
    layout.output_offsets.push_back(offset);
    offset += AlignUp(t.bytes) + kGuardBytes;
  }
  layout.total_bytes = offset;
  for (int r = 0; r < rotation; ++r) {
    CallSpec call;
    for (size_t i = 0; i < layout.inputs.size(); ++i) {
      call.inputs.push_back(Slot(layout.inputs[i], layout.input_offsets[r][i]));
    }
    for (size_t i = 0; i < layout.outputs.size(); ++i) {
      call.outputs.push_back(Slot(layout.outputs[i], layout.output_offsets[i]));
    }
    layout.calls.push_back(std::move(call));
  }
  return layout;
}

size_t ArenaLayout::InputSetBytes() const {
  size_t bytes = 0;
  for (const Tensor& t : inputs) bytes += AlignUp(t.bytes);
  return bytes;
}

Result<std::unique_ptr<KernelProcess>> KernelProcess::Spawn(const std::string& role,
                                                            const RunnerOptions& options,
                                                            Env& env) {
  Result<std::unique_ptr<RunnerHandle>> runner = env.StartRunner(options);
  if (!runner.ok()) return runner.status().WithContext("starting the " + role + " runner");
  auto process = std::unique_ptr<KernelProcess>(new KernelProcess(role, std::move(runner).value()));
  process->bridge_ = !options.exe_args.empty();
  static std::atomic<uint64_t> next_serial{1};
  process->serial_ = next_serial++;
  return process;
}

Status KernelProcess::Load(const std::filesystem::path& artifact, double timeout_seconds) {
  KOPE_ASSIGN_OR_RETURN(load_outcome_, runner_->Load(artifact, timeout_seconds));
  request_seconds_ += load_outcome_.parent_seconds;
  overhead_seconds_["load"] += load_outcome_.parent_seconds;
  return Status::Ok();
}

KernelProcess::~KernelProcess() {
  runner_.reset();  // ends the process before its folder goes
  if (!owned_folder_.empty()) {
    std::error_code ec;
    std::filesystem::remove_all(owned_folder_, ec);
  }
}

void KernelProcess::ResetAccounting() {
  kernel_seconds_ = 0;
  request_seconds_ = 0;
  overhead_seconds_.clear();
}

Result<CallOutcome> KernelProcess::Prepare(ArenaLayout layout, double timeout_seconds,
                                           bool copies) {
  layout_ = std::move(layout);
  shared_ = false;
  // A kept arena is mapped again all the same (the runner then treats it as new: a GPU runner
  // uploads the inputs again); what is saved is the kernel populating fresh pages.
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  const size_t exact = (layout_.total_bytes + page - 1) / page * page;
  auto fits = [&](const std::unique_ptr<SharedArena>& a) {
    return a != nullptr && (keep_arena_ ? a->size() >= exact : a->size() == exact);
  };
  if (!fits(arena_)) {
    if (retain_arenas_ && arena_ != nullptr && arena_->size() >= (1u << 20)) {
      retained_.push_back(std::move(arena_));
    }
    arena_.reset();
    for (auto it = adopted_.begin(); it != adopted_.end(); ++it) {
      if (!fits(*it)) continue;
      arena_ = std::move(*it);
      adopted_.erase(it);
      break;
    }
    if (arena_ == nullptr) {
      KOPE_ASSIGN_OR_RETURN(arena_, SharedArena::Create(layout_.total_bytes));
    }
  }
  KOPE_ASSIGN_OR_RETURN(CallOutcome mapped,
                        runner_->MapArena(*arena_, timeout_seconds, copies || !bridge_));
  request_seconds_ += mapped.parent_seconds;
  overhead_seconds_["map"] += mapped.parent_seconds;
  return mapped;
}

Result<CallOutcome> KernelProcess::ShareArena(const KernelProcess& for_process, int* fd,
                                              double timeout_seconds) {
  return Accounted(
      runner_->ShareArena(layout_.total_bytes, for_process.serial_, fd, timeout_seconds), "map");
}

Result<CallOutcome> KernelProcess::PrepareShared(ArenaLayout layout, int fd,
                                                 double timeout_seconds) {
  layout_ = std::move(layout);
  shared_ = true;
  return Accounted(runner_->MapSharedArena(fd, layout_.total_bytes, timeout_seconds), "map");
}

Result<CallOutcome> KernelProcess::Draw(int rotation, uint64_t seed, Runner::DrawMode mode,
                                        const std::vector<Runner::DrawSpec>& distributions,
                                        double timeout_seconds) {
  const bool timing = mode == Runner::DrawMode::kTiming || mode == Runner::DrawMode::kTimingShared;
  return Accounted(runner_->Draw(layout_.calls[static_cast<size_t>(rotation)], seed, mode,
                                 distributions, timeout_seconds),
                   timing ? "time" : "check");
}

Result<CallOutcome> KernelProcess::ReferenceCall(bool summarize, double timeout_seconds) {
  return Accounted(runner_->ReferenceCall(layout_.calls[0], summarize, timeout_seconds), "call");
}

Result<CallOutcome> KernelProcess::Poison(const std::vector<Runner::PoisonSpan>& spans,
                                          const std::string& guard, double timeout_seconds) {
  return Accounted(runner_->Poison(spans, guard, timeout_seconds), "check");
}

Result<CallOutcome> KernelProcess::Check(const std::vector<std::pair<double, double>>& tolerances,
                                         double timeout_seconds) {
  return Accounted(runner_->Check(layout_.calls[0], tolerances, timeout_seconds), "check");
}

void KernelProcess::AdoptArenas(std::vector<std::unique_ptr<SharedArena>> arenas) {
  for (const auto& arena : arenas) {
    uint8_t* data = arena->data();
    ParallelFor(arena->size(), 16u << 20,
                [&](size_t begin, size_t end) { std::memset(data + begin, 0, end - begin); });
  }
  adopted_ = std::move(arenas);
}

std::vector<std::unique_ptr<SharedArena>> KernelProcess::ReleaseArenas() {
  std::vector<std::unique_ptr<SharedArena>> arenas = std::move(retained_);
  retained_.clear();
  if (arena_ != nullptr) arenas.push_back(std::move(arena_));
  return arenas;
}

Result<CallOutcome> KernelProcess::Accounted(Result<CallOutcome> outcome, const char* request) {
  if (outcome.ok()) Account(*outcome, request);
  return outcome;
}

void KernelProcess::Account(const CallOutcome& outcome, const char* request) {
  const double kernel = outcome.kernel_seconds();
  kernel_seconds_ += kernel;
  request_seconds_ += outcome.parent_seconds;
  // Copies between the arena and a GPU are booked apart: they grow with the tensors' bytes.
  overhead_seconds_[request] += outcome.parent_seconds - kernel - outcome.copy_seconds;
  if (outcome.copy_seconds > 0) overhead_seconds_["copy"] += outcome.copy_seconds;
}

Result<CallOutcome> KernelProcess::Call(int rotation, double timeout_seconds) {
  return Accounted(runner_->Call(layout_.calls[static_cast<size_t>(rotation)], timeout_seconds),
                   "call");
}

Result<CallOutcome> KernelProcess::Time(int count, bool flush, double timeout_seconds) {
  return Accounted(runner_->Time(layout_.calls, count, flush, timeout_seconds), "time");
}

}  // namespace kope
