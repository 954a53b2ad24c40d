#include "serve.h"

#include <dlfcn.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <string>
#include <vector>

#if defined(__x86_64__)
#endif

#include "../protocol.h"
#include "cache_flush.h"
#include "cuda_device.h"
#include "kope/kernel.h"

namespace kope::runner_child {
namespace {

using runner_protocol::ByteRange;
using runner_protocol::Frame;
using runner_protocol::MessageType;
using runner_protocol::Reader;
using runner_protocol::Reply;
using runner_protocol::ReplyStatus;
using runner_protocol::Writer;

kope_tensor MakeTensor(const TensorSlot& slot, uint8_t* base) {
  kope_tensor t;
  std::memset(&t, 0, sizeof(t));
  t.data = base + slot.offset;
  t.dtype = slot.dtype;
  t.ndim = static_cast<int32_t>(slot.shape.size());
  int64_t contiguous = 1;
  for (size_t k = slot.shape.size(); k-- > 0;) {
    t.shape[k] = slot.shape[k];
    t.strides[k] = slot.strides.empty() ? contiguous : slot.strides[k];
    contiguous *= slot.shape[k] > 0 ? slot.shape[k] : 1;
  }
  return t;
}

class Server {
 public:
  Server(int sock, std::filesystem::path kernels_dir, DeviceOptions device)
      : sock_(sock), kernels_dir_(std::move(kernels_dir)), device_(std::move(device)) {}

  int Run() {
    // A GPU runner creates its CUDA context right away, while the parent is still busy
    // (compiling, starting other runners); LOAD and MAP then find it ready.
    (void)OpenDevice();
    while (true) {
      Result<Frame> frame = runner_protocol::ReadFrame(sock_, std::nullopt, -1);
      if (!frame.ok()) {
        // The parent went away (or sent garbage): nothing left to serve.
        if (frame.status().code() == StatusCode::kUnavailable) return 0;
        std::fprintf(stderr, "kope-runner: %s\n", frame.status().ToString().c_str());
        return 2;
      }
      Reply reply;
      Reader reader(frame->payload);
      int map_fd = -1;
      for (size_t i = 0; i < frame->fds.size(); ++i) {
        if (i == 0 && frame->type == MessageType::kMap) {
          map_fd = frame->fds[i];
        } else {
          close(frame->fds[i]);
        }
      }
      switch (frame->type) {
        case MessageType::kLoad:
          reply = Load(&reader);
          break;
        case MessageType::kMap:
          reply = Map(&reader, map_fd);
          break;
        case MessageType::kCall:
          reply = Call(&reader);
          break;
        case MessageType::kTime:
          reply = Time(&reader);
          break;
        case MessageType::kQuit:
          return 0;
        default:
          reply = BadRequest("unexpected message type");
          break;
      }
      if (map_fd >= 0) close(map_fd);
      Writer w;
      runner_protocol::WriteReply(reply, &w);
      if (!runner_protocol::WriteFrame(sock_, MessageType::kReply, w.payload(), -1, std::nullopt)
               .ok()) {
        return 0;
      }
    }
  }

 private:
  static Reply BadRequest(std::string message) {
    Reply r;
    r.status = ReplyStatus::kBadRequest;
    r.message = std::move(message);
    return r;
  }

  Reply Load(Reader* r) {
    std::string path;
    if (!r->String(&path, 4096) || !r->AtEnd()) return BadRequest("malformed LOAD");
    if (kernel_ != nullptr) return BadRequest("a kernel is already loaded");
    std::filesystem::path p = std::filesystem::path(path).lexically_normal();
    if (p.parent_path() != kernels_dir_ || p.filename().empty()) {
      return BadRequest("kernels are loaded from " + kernels_dir_.string() + " only");
    }
    Reply reply;
    // The GPU context first: the kernel's static initializers may use it.
    if (Status s = OpenDevice(); !s.ok()) {
      reply.status = ReplyStatus::kLoadError;
      reply.message = s.message();
      return reply;
    }
    void* handle = dlopen(p.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) {
      const char* err = dlerror();
      reply.status = ReplyStatus::kLoadError;
      reply.message = std::string("dlopen failed: ") + (err != nullptr ? err : "unknown error");
      return reply;
    }
    dlerror();
    void* symbol = dlsym(handle, "kope_kernel");
    if (symbol == nullptr) {
      const char* err = dlerror();
      reply.status = ReplyStatus::kLoadError;
      reply.message = std::string("the shared object does not export kope_kernel: ") +
                      (err != nullptr ? err : "null symbol");
      dlclose(handle);
      return reply;
    }
    kernel_ = reinterpret_cast<kope_kernel_fn>(symbol);
    return reply;
  }

  // Opens the GPU once, when this runner serves one.
  Status OpenDevice() {
    if (device_.device.empty() || cuda_ != nullptr) return Status::Ok();
    if (!device_error_.ok()) return device_error_;
    Result<std::unique_ptr<CudaExecutor>> cuda =
        OpenCudaExecutor(device_.device, device_.max_device_bytes);
    if (!cuda.ok()) {
      device_error_ = Status::Unavailable("the GPU is not usable: " + cuda.status().message());
      return device_error_;
    }
    cuda_ = std::move(cuda).value();
    return Status::Ok();
  }

  Reply Map(Reader* r, int fd) {
    uint64_t bytes;
    if (!r->U64(&bytes) || !r->AtEnd() || fd < 0 || bytes == 0) return BadRequest("malformed MAP");
    struct stat st;
    if (fstat(fd, &st) != 0 || st.st_size < 0 || static_cast<uint64_t>(st.st_size) < bytes) {
      return BadRequest("the arena descriptor is smaller than announced");
    }
    // The parent may map the same arena again (a new size set in memory it kept): the mapping
    // stays, so its pages need not be faulted in and pinned again.
    const bool same = arena_ != nullptr && bytes == arena_bytes_ && st.st_dev == arena_dev_ &&
                      st.st_ino == arena_ino_;
    if (!same) {
      // Mapped before the old one goes, so a new arena never has the old one's address (the
      // GPU executor keeps its mirror for the same address and size).
      void* data = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
      if (data == MAP_FAILED) return BadRequest(std::string("mmap: ") + std::strerror(errno));
      if (arena_ != nullptr) munmap(arena_, arena_bytes_);
      arena_ = static_cast<uint8_t*>(data);
      arena_bytes_ = bytes;
      arena_dev_ = st.st_dev;
      arena_ino_ = st.st_ino;
    }
    if (Status s = OpenDevice(); !s.ok()) return BadRequest(s.message());
    if (cuda_ != nullptr) {
      if (Status s = cuda_->Map(arena_, arena_bytes_); !s.ok()) {
        munmap(arena_, arena_bytes_);
        arena_ = nullptr;
        arena_bytes_ = 0;
        return BadRequest(s.message());
      }
    }
    return Reply{};
  }

  Result<PreparedCall> ReadCall(Reader* r) {
    KOPE_ASSIGN_OR_RETURN(CallSpec spec, runner_protocol::ReadCallSpec(r, arena_bytes_));
    PreparedCall call;
    for (const auto* list : {&spec.inputs, &spec.outputs}) {
      for (const TensorSlot& slot : *list) {
        KOPE_ASSIGN_OR_RETURN(ByteRange range, runner_protocol::SlotRange(slot, arena_bytes_));
        call.ranges.push_back(range);
        // On a GPU the kernel gets the device mirror's addresses at the same offsets.
        uint8_t* base = cuda_ != nullptr ? cuda_->device_base() : arena_;
        (list == &spec.inputs ? call.inputs : call.outputs).push_back(MakeTensor(slot, base));
      }
    }
    return call;
  }

  Status Ready() const {
    if (kernel_ == nullptr) return Status::FailedPrecondition("no kernel loaded");
    if (arena_ == nullptr) return Status::FailedPrecondition("no arena mapped");
    return Status::Ok();
  }

  // One timed call on fresh copies of the tensor descriptions.
  int Invoke(const PreparedCall& call, int64_t* ns) {
    std::vector<kope_tensor> inputs = call.inputs;
    std::vector<kope_tensor> outputs = call.outputs;
    const auto start = std::chrono::steady_clock::now();
    int rc = kernel_(inputs.data(), static_cast<int>(inputs.size()), outputs.data(),
                     static_cast<int>(outputs.size()), nullptr);
    const auto end = std::chrono::steady_clock::now();
    *ns = std::chrono::duration_cast<std::chrono::nanoseconds>(end - start).count();
    return rc;
  }

  Reply Call(Reader* r) {
    if (Status s = Ready(); !s.ok()) return BadRequest(s.message());
    Result<PreparedCall> call = ReadCall(r);
    if (!call.ok()) return BadRequest(call.status().message());
    if (!r->AtEnd()) return BadRequest("trailing bytes after CALL");
    Reply reply;
    if (cuda_ != nullptr) {
      cuda_->Call(kernel_, *call, &reply);
      return reply;
    }
    reply.ns.resize(1);
    reply.rc = Invoke(*call, &reply.ns[0]);
    if (reply.rc != 0) reply.status = ReplyStatus::kKernelError;
    return reply;
  }

  Reply Time(Reader* r) {
    if (Status s = Ready(); !s.ok()) return BadRequest(s.message());
    uint32_t count, n;
    uint8_t flush;
    if (!r->U32(&count) || !r->U8(&flush) || !r->U32(&n) || n == 0 ||
        n > runner_protocol::kMaxRotation || count > runner_protocol::kMaxTimedCalls) {
      return BadRequest("malformed TIME");
    }
    std::vector<PreparedCall> rotation;
    for (uint32_t i = 0; i < n; ++i) {
      Result<PreparedCall> call = ReadCall(r);
      if (!call.ok()) return BadRequest(call.status().message());
      rotation.push_back(std::move(call).value());
    }
    if (!r->AtEnd()) return BadRequest("trailing bytes after TIME");
    Reply reply;
    if (cuda_ != nullptr) {
      reply.ns.reserve(count);
      cuda_->Time(kernel_, rotation, count, flush != 0, &reply);
      return reply;
    }
    reply.ns.reserve(count);
    for (uint32_t i = 0; i < count; ++i) {
      const PreparedCall& call = rotation[i % n];
      if (flush != 0) {
        for (const ByteRange& range : call.ranges) {
          if (!FlushFromCaches(arena_ + range.offset, range.bytes)) {
            return BadRequest("cache flushing is not supported on this architecture");
          }
          reply.flushed_bytes += range.bytes;
        }
      }
      int64_t ns;
      int rc = Invoke(call, &ns);
      reply.ns.push_back(ns);
      if (rc != 0) {
        reply.status = ReplyStatus::kKernelError;
        reply.rc = rc;
        break;
      }
    }
    return reply;
  }

  int sock_;
  std::filesystem::path kernels_dir_;
  DeviceOptions device_;
  std::unique_ptr<CudaExecutor> cuda_;  // set at start when the runner serves a GPU
  Status device_error_;                 // why the GPU could not be opened
  kope_kernel_fn kernel_ = nullptr;
  uint8_t* arena_ = nullptr;
  uint64_t arena_bytes_ = 0;
  dev_t arena_dev_ = 0;  // the arena's file, to recognize it when it is mapped again
  ino_t arena_ino_ = 0;
};

}  // namespace

int Serve(int sock, const std::filesystem::path& kernels_dir, const DeviceOptions& device) {
  Server server(sock, kernels_dir.lexically_normal(), device);
  return server.Run();
}

}  // namespace kope::runner_child
