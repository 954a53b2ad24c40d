#include "cuda_device.h"

#include <cuda_runtime_api.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>

#include "cuda_alloc_cap.h"

namespace kope::runner_child {
namespace {

using runner_protocol::ByteRange;
using runner_protocol::Reply;
using runner_protocol::ReplyStatus;
using Clock = std::chrono::steady_clock;

// Calls whose stream-ordered time is under this are timed by graph replay: no launch gaps,
// and the per-call host overhead of the gated loop (tens of microseconds) is amortized.
constexpr double kGraphBelowSeconds = 50e-6;
// Calls captured in one graph (rounded up to a multiple of the rotation).
constexpr int kGraphCalls = 32;
// How long the gate holds the stream at most: a kernel that synchronizes its own
// stream (or the device) inside the call would otherwise wait for the gate forever.
constexpr auto kGateTimeout = std::chrono::milliseconds(20);
// Bytes after an output copied both ways with it (the parent's guard bytes).
constexpr uint64_t kMaxGuardCopy = 1 << 20;
// Arenas at least this large are page-locked for faster copies.
constexpr uint64_t kRegisterFrom = 8ull << 20;

[[noreturn]] void Fatal(const char* what, cudaError_t e) {
  std::fprintf(stderr, "kope-runner: CUDA error %s: %s (%s); the GPU context is unusable\n", what,
               cudaGetErrorString(e), cudaGetErrorName(e));
  std::fflush(stderr);
  _exit(kCudaFatalExitCode);
}

// The harness's own calls cannot fail unless the context broke.
void Check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) Fatal(what, e);
}

std::string ErrorText(cudaError_t e) {
  return std::string(cudaGetErrorName(e)) + ": " + cudaGetErrorString(e);
}

// Holds the stream until the host has queued the timed work, so that launch
// latency stays out of the events; gives up after kGateTimeout.
struct Gate {
  std::atomic<int> open{1};
  std::atomic<bool> timed_out{false};
};

void CUDART_CB GateWait(void* arg) {
  auto* gate = static_cast<Gate*>(arg);
  const auto deadline = Clock::now() + kGateTimeout;
  while (gate->open.load(std::memory_order_acquire) == 0) {
    if (Clock::now() > deadline) {
      gate->timed_out.store(true);
      return;
    }
  }
}

int64_t ElapsedNs(cudaEvent_t a, cudaEvent_t b) {
  float ms = 0;
  Check(cudaEventElapsedTime(&ms, a, b), "reading an event");
  return static_cast<int64_t>(static_cast<double>(ms) * 1e6);
}

int Invoke(kope_kernel_fn kernel, const PreparedCall& call, cudaStream_t stream) {
  std::vector<kope_tensor> inputs = call.inputs;
  std::vector<kope_tensor> outputs = call.outputs;
  return kernel(inputs.data(), static_cast<int>(inputs.size()), outputs.data(),
                static_cast<int>(outputs.size()), stream);
}

class CudaDevice final : public CudaExecutor {
 public:
  explicit CudaDevice(int device) : device_(device) {}
  ~CudaDevice() override = default;  // the process exits; the driver frees everything

  Status Open() {
    if (cudaError_t e = cudaSetDevice(device_); e != cudaSuccess) {
      return Status::Unavailable("cudaSetDevice(" + std::to_string(device_) + "): " + ErrorText(e));
    }
    if (cudaError_t e = cudaFree(nullptr); e != cudaSuccess) {
      return Status::Unavailable("creating the CUDA context: " + ErrorText(e));
    }
    if (cudaError_t e = cudaStreamCreate(&stream_); e != cudaSuccess) {
      return Status::Unavailable("cudaStreamCreate: " + ErrorText(e));
    }
    for (cudaEvent_t* ev : {&start_, &end_stream_, &end_device_}) {
      if (cudaError_t e = cudaEventCreate(ev); e != cudaSuccess) {
        return Status::Unavailable("cudaEventCreate: " + ErrorText(e));
      }
    }
    int l2 = 0;
    cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, device_);
    flush_bytes_ = std::max<size_t>(2 * static_cast<size_t>(l2), 64u << 20);
    return Status::Ok();
  }

  Status Map(uint8_t* host, uint64_t bytes) override {
    if (host == host_ && bytes == bytes_ && dev_ != nullptr) {
      // The same arena again: the mirror and the registration stay; the inputs are not resident.
      DropGraph();
      inputs_resident_ = false;
      return Status::Ok();
    }
    if (registered_) cudaHostUnregister(host_);
    if (dev_ != nullptr) HarnessFree(dev_);
    registered_ = false;
    dev_ = nullptr;
    DropGraph();
    host_ = host;
    bytes_ = bytes;
    inputs_resident_ = false;
    void* p = nullptr;
    if (cudaError_t e = HarnessMalloc(&p, bytes); e != cudaSuccess) {
      cudaGetLastError();
      return Status::Unavailable("allocating " + std::to_string(bytes) +
                                 " bytes of device memory for the tensors: " + ErrorText(e));
    }
    dev_ = static_cast<uint8_t*>(p);
    if (bytes >= kRegisterFrom) {
      registered_ = cudaHostRegister(host, bytes, cudaHostRegisterDefault) == cudaSuccess;
      if (!registered_) cudaGetLastError();  // pageable copies still work
    }
    return Status::Ok();
  }

  uint8_t* device_base() const override { return dev_; }

  void Call(kope_kernel_fn kernel, const PreparedCall& call, Reply* reply) override {
    const std::vector<ByteRange> ranges = CopyRanges(call);
    auto copy_start = std::chrono::steady_clock::now();
    for (const ByteRange& r : ranges) {
      Check(cudaMemcpyAsync(dev_ + r.offset, host_ + r.offset, r.bytes, cudaMemcpyHostToDevice,
                            stream_),
            "copying tensors to the GPU");
    }
    Check(cudaStreamSynchronize(stream_), "copying tensors to the GPU");
    AddCopyTime(copy_start, reply);
    Check(cudaEventRecord(start_, stream_), "recording an event");
    const int rc = Invoke(kernel, call, stream_);
    cudaError_t pending = cudaGetLastError();
    const cudaError_t synced = SynchronizeDevice("after the kernel call");
    if (pending == cudaSuccess) pending = synced;
    Check(cudaEventRecord(end_device_, stream_), "recording an event");
    Check(cudaEventSynchronize(end_device_), "after the kernel call");
    reply->ns.push_back(ElapsedNs(start_, end_device_));
    copy_start = std::chrono::steady_clock::now();
    for (const ByteRange& r : ranges) {
      Check(cudaMemcpyAsync(host_ + r.offset, dev_ + r.offset, r.bytes, cudaMemcpyDeviceToHost,
                            stream_),
            "copying tensors from the GPU");
    }
    Check(cudaStreamSynchronize(stream_), "copying tensors from the GPU");
    AddCopyTime(copy_start, reply);
    Finish(rc, pending, reply);
  }

  void Time(kope_kernel_fn kernel, const std::vector<PreparedCall>& rotation, uint32_t count,
            bool flush, Reply* reply) override {
    UploadInputs(rotation, reply);
    if (flush && flush_ == nullptr) {
      if (cudaError_t e = HarnessMalloc(&flush_, flush_bytes_); e != cudaSuccess) {
        Fatal("allocating the L2 flush buffer", e);
      }
    }
    if (slack_ns_ < 0) Calibrate();
    if (flush) reply->flushed_bytes = static_cast<uint64_t>(flush_bytes_) * count;
    // Graphs only for kernels whose work never outlived the stream in the per-call loop:
    // work on other streams is not in a captured graph.
    if (graph_ok_ && outlived_ == 0 && estimate_ns_ > 0 &&
        estimate_ns_ < kGraphBelowSeconds * 1e9) {
      if (TimeGraph(kernel, rotation, count, flush, reply) && GraphAgrees(*reply)) return;
      graph_ok_ = false;  // not capturable, or the graph misses work: call by call from now on
      reply->ns.clear();
      reply->status = ReplyStatus::kOk;
      reply->rc = 0;
      reply->message.clear();
    }
    for (uint32_t i = 0; i < count; ++i) {
      int64_t ns = 0;
      cudaError_t pending = cudaSuccess;
      const int rc = TimedCall(kernel, rotation[i % rotation.size()], flush, &ns, &pending);
      reply->ns.push_back(ns);
      if (rc != 0 || pending != cudaSuccess) {
        Finish(rc, pending, reply);
        return;
      }
    }
    if (!reply->ns.empty()) {
      std::vector<int64_t> sorted = reply->ns;
      std::nth_element(sorted.begin(), sorted.begin() + sorted.size() / 2, sorted.end());
      estimate_ns_ = static_cast<double>(sorted[sorted.size() / 2]);
    }
  }

 private:
  // Synchronizes the device; a sticky error ends the process, a non-sticky one is returned.
  cudaError_t SynchronizeDevice(const char* what) {
    const cudaError_t e = cudaDeviceSynchronize();
    if (e == cudaSuccess) return e;
    cudaGetLastError();
    if (cudaError_t again = cudaDeviceSynchronize(); again != cudaSuccess) Fatal(what, e);
    return e;
  }

  static void Finish(int rc, cudaError_t pending, Reply* reply) {
    if (rc != 0) {
      reply->status = ReplyStatus::kKernelError;
      reply->rc = rc;
    } else if (pending != cudaSuccess) {
      reply->status = ReplyStatus::kKernelError;
      reply->rc = -1;
      reply->message = "the kernel returned 0 but left a CUDA error: " + ErrorText(pending);
    }
  }

  // The call's ranges, each output's extended over the bytes after it (the guards), up
  // to the next range of the call or the end of the arena.
  std::vector<ByteRange> CopyRanges(const PreparedCall& call) const {
    std::vector<ByteRange> out = call.ranges;
    const size_t first_output = call.inputs.size();
    for (size_t i = first_output; i < out.size(); ++i) {
      uint64_t end = out[i].offset + out[i].bytes;
      uint64_t limit = std::min<uint64_t>(bytes_, end + kMaxGuardCopy);
      for (const ByteRange& other : call.ranges) {
        if (other.offset >= end && other.offset < limit) limit = other.offset;
      }
      out[i].bytes = limit - out[i].offset;
    }
    return out;
  }

  static void AddCopyTime(std::chrono::steady_clock::time_point since, Reply* reply) {
    reply->copy_ns += static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                                std::chrono::steady_clock::now() - since)
                                                .count());
  }

  void UploadInputs(const std::vector<PreparedCall>& rotation, Reply* reply) {
    if (inputs_resident_) return;
    const auto copy_start = std::chrono::steady_clock::now();
    for (const PreparedCall& call : rotation) {
      for (size_t i = 0; i < call.inputs.size(); ++i) {
        const ByteRange& r = call.ranges[i];
        Check(cudaMemcpyAsync(dev_ + r.offset, host_ + r.offset, r.bytes, cudaMemcpyHostToDevice,
                              stream_),
              "copying inputs to the GPU");
      }
    }
    Check(cudaStreamSynchronize(stream_), "copying inputs to the GPU");
    AddCopyTime(copy_start, reply);
    inputs_resident_ = true;
  }

  // Demotes persisting L2 lines and sets the persisting carve-out to zero, so that
  // nothing a kernel asked to keep in L2 survives into the next call.
  void ResetPersistingL2() {
    cudaStreamAttrValue value;
    std::memset(&value, 0, sizeof(value));
    value.accessPolicyWindow.hitProp = cudaAccessPropertyNormal;
    value.accessPolicyWindow.missProp = cudaAccessPropertyNormal;
    cudaStreamSetAttribute(stream_, cudaStreamAttributeAccessPolicyWindow, &value);
    size_t limit = 0;
    if (cudaDeviceGetLimit(&limit, cudaLimitPersistingL2CacheSize) == cudaSuccess && limit != 0) {
      cudaDeviceSetLimit(cudaLimitPersistingL2CacheSize, 0);
    }
    cudaCtxResetPersistingL2Cache();
    cudaGetLastError();  // GPUs without persisting L2 answer "not supported"
  }

  void Flush() {
    ResetPersistingL2();
    Check(cudaMemsetAsync(flush_, ++flush_value_, flush_bytes_, stream_), "flushing L2");
  }

  // One call: returns the kernel's rc; *ns is the stream-ordered time, or the
  // device-wide time when work outlived the stream by more than the slack.
  int TimedCall(kope_kernel_fn kernel, const PreparedCall& call, bool flush, int64_t* ns,
                cudaError_t* pending) {
    if (flush) Flush();
    if (gate_enabled_) {
      gate_.open.store(0, std::memory_order_release);
      Check(cudaLaunchHostFunc(stream_, GateWait, &gate_), "holding the stream");
    }
    Check(cudaEventRecord(start_, stream_), "recording an event");
    const int rc = kernel != nullptr ? Invoke(kernel, call, stream_) : 0;
    *pending = cudaGetLastError();
    Check(cudaEventRecord(end_stream_, stream_), "recording an event");
    gate_.open.store(1, std::memory_order_release);
    const cudaError_t synced = SynchronizeDevice("after the kernel call");
    if (*pending == cudaSuccess) *pending = synced;
    Check(cudaEventRecord(end_device_, stream_), "recording an event");
    Check(cudaEventSynchronize(end_device_), "after the kernel call");
    if (gate_.timed_out.exchange(false)) gate_enabled_ = false;
    const int64_t stream_ns = ElapsedNs(start_, end_stream_);
    const int64_t device_ns = ElapsedNs(start_, end_device_);
    *ns = device_ns - stream_ns > slack_ns_ && slack_ns_ >= 0 ? device_ns : stream_ns;
    if (device_ns - stream_ns > slack_ns_ && slack_ns_ >= 0) ++outlived_;
    return rc;
  }

  // The latency between the end of the stream's work and an event recorded after a
  // device-wide synchronize, with nothing else running: work that ends later than
  // this after the stream did was left running by the kernel.
  void Calibrate() {
    slack_ns_ = -1;
    std::vector<int64_t> gaps;
    for (int i = 0; i < 24; ++i) {
      int64_t ns = 0;
      cudaError_t pending = cudaSuccess;
      TimedCall(nullptr, PreparedCall{}, false, &ns, &pending);
      gaps.push_back(ElapsedNs(end_stream_, end_device_));
    }
    std::sort(gaps.begin(), gaps.end());
    const int64_t median = gaps[gaps.size() / 2];
    slack_ns_ = std::max<int64_t>(20000, 4 * median);
    std::fprintf(stderr,
                 "kope-runner: CUDA timing: synchronize latency median %.1f us, slack %.1f us\n",
                 static_cast<double>(median) * 1e-3, static_cast<double>(slack_ns_) * 1e-3);
  }

  void DropGraph() {
    if (graph_exec_ != nullptr) cudaGraphExecDestroy(graph_exec_);
    graph_exec_ = nullptr;
    graph_key_.clear();
  }

  static std::string GraphKey(const std::vector<PreparedCall>& rotation, bool flush) {
    std::string key = flush ? "f" : "n";
    for (const PreparedCall& c : rotation) {
      for (const ByteRange& r : c.ranges) key += ":" + std::to_string(r.offset);
      key += ";";
    }
    return key;
  }

  bool Capture(kope_kernel_fn kernel, const std::vector<PreparedCall>& rotation, bool flush,
               int calls) {
    DropGraph();
    while (graph_events_.size() < static_cast<size_t>(2 * calls)) {
      cudaEvent_t ev;
      Check(cudaEventCreate(&ev), "cudaEventCreate");
      graph_events_.push_back(ev);
    }
    if (cudaStreamBeginCapture(stream_, cudaStreamCaptureModeGlobal) != cudaSuccess) {
      cudaGetLastError();
      return false;
    }
    bool ok = true;
    for (int i = 0; i < calls && ok; ++i) {
      if (flush) ok = cudaMemsetAsync(flush_, i & 0xff, flush_bytes_, stream_) == cudaSuccess;
      ok = ok && cudaEventRecordWithFlags(graph_events_[2 * i], stream_, cudaEventRecordExternal) ==
                     cudaSuccess;
      ok = ok && Invoke(kernel, rotation[static_cast<size_t>(i) % rotation.size()], stream_) == 0;
      ok = ok && cudaGetLastError() == cudaSuccess;
      ok = ok && cudaEventRecordWithFlags(graph_events_[2 * i + 1], stream_,
                                          cudaEventRecordExternal) == cudaSuccess;
    }
    cudaGraph_t graph = nullptr;
    const cudaError_t ended = cudaStreamEndCapture(stream_, &graph);
    cudaGetLastError();
    if (!ok || ended != cudaSuccess || graph == nullptr) {
      if (graph != nullptr) cudaGraphDestroy(graph);
      SynchronizeDevice("after a failed graph capture");
      return false;
    }
    const cudaError_t made = cudaGraphInstantiate(&graph_exec_, graph, 0);
    cudaGraphDestroy(graph);
    if (made != cudaSuccess) {
      cudaGetLastError();
      graph_exec_ = nullptr;
      return false;
    }
    graph_key_ = GraphKey(rotation, flush);
    graph_calls_ = calls;
    return true;
  }

  // A graph replay must take about as long as the gated per-call loop measured: a kernel
  // that launches less when it sees a capture (or works on a stream the capture does not
  // follow) would otherwise be timed on a graph that leaves its work out.
  bool GraphAgrees(const Reply& reply) const {
    if (reply.status != ReplyStatus::kOk || reply.ns.empty()) return true;
    std::vector<int64_t> sorted = reply.ns;
    std::nth_element(sorted.begin(), sorted.begin() + sorted.size() / 2, sorted.end());
    const double graph_median = static_cast<double>(sorted[sorted.size() / 2]);
    if (graph_median >= 0.7 * estimate_ns_) return true;
    std::fprintf(stderr,
                 "kope-runner: CUDA timing: graph replay %.2f us against %.2f us call by call; "
                 "timing call by call\n",
                 graph_median * 1e-3, estimate_ns_ * 1e-3);
    return false;
  }

  bool TimeGraph(kope_kernel_fn kernel, const std::vector<PreparedCall>& rotation, uint32_t count,
                 bool flush, Reply* reply) {
    const int n = static_cast<int>(rotation.size());
    const int calls = std::max(n, (kGraphCalls + n - 1) / n * n);
    if (graph_exec_ == nullptr || graph_key_ != GraphKey(rotation, flush)) {
      if (!Capture(kernel, rotation, flush, calls)) return false;
    }
    while (reply->ns.size() < count) {
      if (flush) ResetPersistingL2();
      Check(cudaGraphLaunch(graph_exec_, stream_), "launching the timing graph");
      const cudaError_t synced = SynchronizeDevice("after the timing graph");
      if (synced != cudaSuccess) {
        Finish(0, synced, reply);
        return true;
      }
      for (int i = 0; i < graph_calls_ && reply->ns.size() < count; ++i) {
        reply->ns.push_back(ElapsedNs(graph_events_[2 * i], graph_events_[2 * i + 1]));
      }
    }
    return true;
  }

  int device_;
  cudaStream_t stream_ = nullptr;
  cudaEvent_t start_ = nullptr, end_stream_ = nullptr, end_device_ = nullptr;
  uint8_t* host_ = nullptr;
  uint64_t bytes_ = 0;
  uint8_t* dev_ = nullptr;
  bool registered_ = false;
  bool inputs_resident_ = false;
  void* flush_ = nullptr;
  size_t flush_bytes_ = 0;
  uint8_t flush_value_ = 0;
  Gate gate_;
  bool gate_enabled_ = true;
  int64_t slack_ns_ = -1;
  double estimate_ns_ = -1;  // median stream-ordered time of the last batch
  int64_t outlived_ = 0;     // calls whose work outlived the stream
  bool graph_ok_ = true;
  cudaGraphExec_t graph_exec_ = nullptr;
  std::string graph_key_;
  int graph_calls_ = 0;
  std::vector<cudaEvent_t> graph_events_;
};

}  // namespace

}  // namespace kope::runner_child

// The plugin's entry point (cuda_device_loader.cc): a new executor, or null with `error` set.
extern "C" __attribute__((visibility("default"))) kope::runner_child::CudaExecutor*
kope_runner_open_cuda(const char* spec_text, uint64_t max_device_bytes, std::string* error) {
  using namespace kope::runner_child;
  const std::string spec = spec_text;
  char* end = nullptr;
  const long device =
      spec.rfind("cuda:", 0) == 0 && spec.size() > 5 ? std::strtol(spec.c_str() + 5, &end, 10) : -1;
  if (device < 0 || device > 1024 || end == nullptr || *end != '\0') {
    *error = "device '" + spec + "' is not cuda:N";
    return nullptr;
  }
  SetDeviceAllocationCap(max_device_bytes);
  auto executor = std::make_unique<CudaDevice>(static_cast<int>(device));
  if (kope::Status s = executor->Open(); !s.ok()) {
    *error = s.message();
    return nullptr;
  }
  return executor.release();
}
