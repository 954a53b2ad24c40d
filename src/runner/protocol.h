// The control protocol between the parent (Runner) and the kope-runner child.
//
// A stream of frames over an AF_UNIX SOCK_STREAM socketpair: a header of two
// native-endian u32 (type, payload length) and the payload. Both sides run on
// the same machine, from the same build. The parent sends one request and
// reads one reply; the child sends a hello once, after it confined itself.
// A MAP request carries the arena's memfd as SCM_RIGHTS.
//
// Payloads, field by field:
//   HELLO  u8 seccomp, u8 rlimits, string notes ('\n'-separated)
//   LOAD   string path (a file inside scratch/kernels)
//   MAP    u64 bytes (+ the memfd); the bridge also takes an optional u8 pin (0: inputs are
//          drawn on the device, do not pin the arena's pages now)
//   CALL   call spec
//   TIME   u32 count, u8 flush, u32 n, n call specs
//   QUIT   (empty)
// The checking requests, served by the Python bridge only (python/kope_bridge/checker.py):
//   SHARE       u64 bytes, u64 token (the candidate's); the reply carries the memory's descriptor
//   MAP_SHARED  u64 bytes (+ that descriptor): the arena another runner shares
//   DRAW        call spec, u64 seed, u8 mode (Runner::DrawMode: 4 takes the inputs the parent
//               wrote), per input: u8 kind, f64 mean, stddev, low, high, low_exp, high_exp,
//               i32 num_distinct
//   REF_CALL    call spec, u8 summarize (answer the outputs' fingerprints)
//   POISON      string guard, u32 n, n (u64 offset, u64 bytes, string element pattern)
//   CHECK       call spec, per output f64 rtol, f64 atol
// REF_CALL and CHECK answer a JSON summary in the reply's message.
//   REPLY  u32 ReplyStatus, i32 rc, u64 flushed_bytes, u64 copy_ns, u32 n, n i64 ns,
//          string message
// A call spec is u32 n_inputs, u32 n_outputs, then per tensor: i32 dtype,
// u32 ndim, ndim i64 shape, u32 n_strides (0 or ndim), i64 strides, u64 offset.
// A string is u32 length + bytes. Every field is validated by the reader.
#ifndef KOPE_SRC_RUNNER_PROTOCOL_H_
#define KOPE_SRC_RUNNER_PROTOCOL_H_

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kope/base/status.h"
#include "kope/runner/runner.h"

namespace kope::runner_protocol {

enum class MessageType : uint32_t {
  kHello = 1,
  kLoad = 2,
  kMap = 3,
  kCall = 4,
  kTime = 5,
  kQuit = 6,
  kShare = 7,
  kMapShared = 8,
  kReferenceCall = 9,
  kPoison = 10,
  kCheck = 11,
  kDraw = 12,
  kReply = 100,
};

enum class ReplyStatus : uint32_t {
  kOk = 0,
  kKernelError = 1,  // the kernel returned non-zero (rc)
  kLoadError = 2,    // dlopen or dlsym failed (message)
  kBadRequest = 3,   // the request failed validation (message); a bug in the parent
};

constexpr uint32_t kMaxPayloadBytes = 256u << 20;
constexpr uint32_t kMaxTensorsPerCall = 256;
constexpr uint32_t kMaxRotation = 64;
constexpr uint32_t kMaxTimedCalls = 10'000'000;

struct Reply {
  ReplyStatus status = ReplyStatus::kOk;
  int32_t rc = 0;
  uint64_t flushed_bytes = 0;
  uint64_t copy_ns = 0;  // wall time copying tensors between the arena and a GPU
  std::vector<int64_t> ns;
  std::string message;
};

struct Hello {
  bool seccomp = false;
  bool rlimits = false;
  std::vector<std::string> notes;
};

// Appends native-endian fields to a payload.
class Writer {
 public:
  void U8(uint8_t v) { Raw(&v, sizeof(v)); }
  void U32(uint32_t v) { Raw(&v, sizeof(v)); }
  void I32(int32_t v) { Raw(&v, sizeof(v)); }
  void U64(uint64_t v) { Raw(&v, sizeof(v)); }
  void I64(int64_t v) { Raw(&v, sizeof(v)); }
  void F64(double v) { Raw(&v, sizeof(v)); }
  void String(std::string_view s);
  void Raw(const void* data, size_t n);
  const std::string& payload() const { return payload_; }
  std::string Take() { return std::move(payload_); }

 private:
  std::string payload_;
};

// Reads fields back; every read fails cleanly past the end.
class Reader {
 public:
  explicit Reader(std::string_view payload) : data_(payload) {}
  bool U8(uint8_t* v) { return Raw(v, sizeof(*v)); }
  bool U32(uint32_t* v) { return Raw(v, sizeof(*v)); }
  bool I32(int32_t* v) { return Raw(v, sizeof(*v)); }
  bool U64(uint64_t* v) { return Raw(v, sizeof(*v)); }
  bool I64(int64_t* v) { return Raw(v, sizeof(*v)); }
  bool String(std::string* s, size_t max_bytes = 1 << 20);
  bool Raw(void* out, size_t n);
  bool AtEnd() const { return pos_ == data_.size(); }

 private:
  std::string_view data_;
  size_t pos_ = 0;
};

// Bytes of one element of `dtype`; 0 for an unknown dtype.
size_t ElementBytes(int dtype);

// The byte range [offset, offset + bytes) a tensor covers in the arena: its
// strides (row-major contiguous when empty) applied to its shape. Fails when
// the dtype, rank, shape or strides are invalid, the offset is not aligned to
// the element size, or the range overflows or leaves an arena of `arena_bytes`.
struct ByteRange {
  uint64_t offset = 0;
  uint64_t bytes = 0;
};
Result<ByteRange> SlotRange(const TensorSlot& slot, uint64_t arena_bytes);
Status ValidateCall(const CallSpec& call, uint64_t arena_bytes);

void WriteCallSpec(const CallSpec& call, Writer* w);
// Parses and validates a call spec against an arena of `arena_bytes`.
Result<CallSpec> ReadCallSpec(Reader* r, uint64_t arena_bytes);

void WriteReply(const Reply& reply, Writer* w);
Result<Reply> ReadReply(std::string_view payload);
void WriteHello(const Hello& hello, Writer* w);
Result<Hello> ReadHello(std::string_view payload);

// A message type's name ("load", "ref_call", ...); empty for a number that is no message type
// (a frame with one is malformed).
std::string_view MessageTypeName(uint32_t type);

struct Frame {
  MessageType type = MessageType::kQuit;
  std::string payload;
  std::vector<int> fds;  // received descriptors, owned by the caller (close them)
  int sender_pid = 0;    // from SCM_CREDENTIALS when the socket has SO_PASSCRED
};

using Deadline = std::optional<std::chrono::steady_clock::time_point>;

// Sends one frame (and `pass_fd` as SCM_RIGHTS when >= 0). Never raises
// SIGPIPE: a closed peer is Unavailable; a passed deadline is DeadlineExceeded.
Status WriteFrame(int sock, MessageType type, std::string_view payload, int pass_fd,
                  Deadline deadline);

// Receives one frame. Unavailable when the peer closed the socket, or when
// `watch_fd` (a pidfd, or -1) becomes readable, that is the child exited;
// DeadlineExceeded when the deadline passed first; Corruption for a malformed
// header.
Result<Frame> ReadFrame(int sock, Deadline deadline, int watch_fd);

}  // namespace kope::runner_protocol

#endif  // KOPE_SRC_RUNNER_PROTOCOL_H_
