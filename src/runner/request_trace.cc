#include "request_trace.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>

namespace kope::runner_internal {
namespace {

const char* KindName(CallOutcome::Kind kind) {
  switch (kind) {
    case CallOutcome::Kind::kOk:
      return "ok";
    case CallOutcome::Kind::kKernelError:
      return "kernel_error";
    case CallOutcome::Kind::kCrash:
      return "crash";
    case CallOutcome::Kind::kTimeout:
      return "timeout";
  }
  return "?";
}

struct Trace {
  std::mutex mu;
  std::FILE* file = nullptr;
  std::chrono::steady_clock::time_point start = std::chrono::steady_clock::now();
};

// Opened at the first request; null when tracing is off.
Trace* TheTrace() {
  static Trace* trace = []() -> Trace* {
    const char* path = std::getenv("KOPE_TRACE_REQUESTS");
    if (path == nullptr || *path == '\0') return nullptr;
    std::FILE* f = std::fopen(path, "a");
    if (f == nullptr) {
      std::fprintf(stderr, "kope: cannot open KOPE_TRACE_REQUESTS file %s: not tracing\n", path);
      return nullptr;
    }
    auto* t = new Trace;  // lives as long as the process: requests may come from any thread
    t->file = f;
    std::fseek(f, 0, SEEK_END);
    if (std::ftell(f) == 0) {
      std::fputs("t_s\tpid\trequest\tarena_bytes\tparent_ms\tkernel_ms\tcopy_ms\toutcome\n", f);
    }
    return t;
  }();
  return trace;
}

}  // namespace

void TraceRequest(pid_t pid, runner_protocol::MessageType type, std::string_view payload,
                  uint64_t arena_bytes, const CallOutcome& outcome) {
  Trace* trace = TheTrace();
  if (trace == nullptr) return;
  using runner_protocol::MessageType;
  // MAP, MAP_SHARED and SHARE begin with the bytes of the arena they concern.
  if ((type == MessageType::kMap || type == MessageType::kMapShared ||
       type == MessageType::kShare) &&
      payload.size() >= sizeof(arena_bytes)) {
    std::memcpy(&arena_bytes, payload.data(), sizeof(arena_bytes));
  }
  const std::string name(runner_protocol::MessageTypeName(static_cast<uint32_t>(type)));
  std::lock_guard<std::mutex> lock(trace->mu);
  const double t =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - trace->start).count();
  std::fprintf(trace->file, "%.6f\t%d\t%s\t%llu\t%.3f\t%.3f\t%.3f\t%s\n", t, static_cast<int>(pid),
               name.c_str(), static_cast<unsigned long long>(arena_bytes),
               outcome.parent_seconds * 1e3, outcome.kernel_seconds() * 1e3,
               outcome.copy_seconds * 1e3, KindName(outcome.kind));
  std::fflush(trace->file);
}

}  // namespace kope::runner_internal
