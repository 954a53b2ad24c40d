#include "protocol.h"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "kope/kernel.h"

namespace kope::runner_protocol {
namespace {

using Clock = std::chrono::steady_clock;

struct FrameHeader {
  uint32_t type;
  uint32_t length;
};

int RemainingMs(Deadline deadline) {
  if (!deadline) return -1;
  auto left = std::chrono::ceil<std::chrono::milliseconds>(*deadline - Clock::now()).count();
  return static_cast<int>(std::clamp<long long>(left, 0, 1 << 30));
}

void TakeControlMessages(msghdr* msg, Frame* frame) {
  for (cmsghdr* c = CMSG_FIRSTHDR(msg); c != nullptr; c = CMSG_NXTHDR(msg, c)) {
    if (c->cmsg_level != SOL_SOCKET) continue;
    if (c->cmsg_type == SCM_RIGHTS) {
      size_t n = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
      for (size_t i = 0; i < n; ++i) {
        int fd;
        std::memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
        frame->fds.push_back(fd);
      }
    } else if (c->cmsg_type == SCM_CREDENTIALS) {
      ucred cred;
      std::memcpy(&cred, CMSG_DATA(c), sizeof(cred));
      frame->sender_pid = cred.pid;
    }
  }
}

// Reads exactly `n` bytes into `out`, collecting descriptors and credentials.
Status ReadExactly(int sock, char* out, size_t n, Deadline deadline, int watch_fd, Frame* frame) {
  size_t got = 0;
  while (got < n) {
    pollfd fds[2] = {{sock, POLLIN, 0}, {watch_fd, POLLIN, 0}};
    int ready = poll(fds, watch_fd >= 0 ? 2 : 1, RemainingMs(deadline));
    if (ready < 0) {
      if (errno == EINTR) continue;
      return Status::IoError(std::string("poll: ") + std::strerror(errno));
    }
    if (ready == 0) return Status::DeadlineExceeded("no reply from kope-runner in time");
    if ((fds[0].revents & (POLLIN | POLLHUP | POLLERR)) == 0) {
      return Status::Unavailable("kope-runner exited");
    }
    iovec iov{out + got, n - got};
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * 8) + CMSG_SPACE(sizeof(ucred))];
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control;
    msg.msg_controllen = sizeof(control);
    ssize_t r = recvmsg(sock, &msg, MSG_CMSG_CLOEXEC);
    if (r < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      if (errno == ECONNRESET) return Status::Unavailable("kope-runner closed the connection");
      return Status::IoError(std::string("recvmsg: ") + std::strerror(errno));
    }
    TakeControlMessages(&msg, frame);
    if (r == 0) return Status::Unavailable("kope-runner closed the connection");
    got += static_cast<size_t>(r);
  }
  return Status::Ok();
}

}  // namespace

std::string_view MessageTypeName(uint32_t type) {
  switch (static_cast<MessageType>(type)) {
    case MessageType::kHello:
      return "hello";
    case MessageType::kLoad:
      return "load";
    case MessageType::kMap:
      return "map";
    case MessageType::kCall:
      return "call";
    case MessageType::kTime:
      return "time";
    case MessageType::kQuit:
      return "quit";
    case MessageType::kShare:
      return "share";
    case MessageType::kMapShared:
      return "map_shared";
    case MessageType::kReferenceCall:
      return "ref_call";
    case MessageType::kPoison:
      return "poison";
    case MessageType::kCheck:
      return "check";
    case MessageType::kDraw:
      return "draw";
    case MessageType::kReply:
      return "reply";
  }
  return {};
}

void Writer::String(std::string_view s) {
  U32(static_cast<uint32_t>(s.size()));
  Raw(s.data(), s.size());
}

void Writer::Raw(const void* data, size_t n) { payload_.append(static_cast<const char*>(data), n); }

bool Reader::String(std::string* s, size_t max_bytes) {
  uint32_t n;
  if (!U32(&n) || n > max_bytes || n > data_.size() - pos_) return false;
  s->assign(data_.substr(pos_, n));
  pos_ += n;
  return true;
}

bool Reader::Raw(void* out, size_t n) {
  if (n > data_.size() - pos_) return false;
  std::memcpy(out, data_.data() + pos_, n);
  pos_ += n;
  return true;
}

size_t ElementBytes(int dtype) {
  switch (dtype) {
    case KOPE_BOOL:
      return 1;
    case KOPE_F32:
      return 4;
    case KOPE_F64:
      return 8;
    case KOPE_F16:
      return 2;
    case KOPE_BF16:
      return 2;
    case KOPE_I32:
      return 4;
    case KOPE_I64:
      return 8;
  }
  return 0;
}

Result<ByteRange> SlotRange(const TensorSlot& slot, uint64_t arena_bytes) {
  const uint64_t elem = ElementBytes(slot.dtype);
  if (elem == 0) return Status::InvalidArgument("unknown dtype " + std::to_string(slot.dtype));
  const size_t ndim = slot.shape.size();
  if (ndim > KOPE_MAX_DIMS) return Status::InvalidArgument("more than 8 dimensions");
  if (!slot.strides.empty() && slot.strides.size() != ndim) {
    return Status::InvalidArgument("strides and shape differ in rank");
  }
  if (slot.offset % elem != 0) {
    return Status::InvalidArgument("offset " + std::to_string(slot.offset) +
                                   " is not aligned to the element size");
  }
  bool empty = false;
  for (int64_t d : slot.shape) {
    if (d < 0) return Status::InvalidArgument("negative dimension");
    empty = empty || d == 0;
  }
  // The last element's index: sum of (shape[i] - 1) * stride[i].
  uint64_t last = 0;
  uint64_t contiguous = 1;
  for (size_t k = ndim; k-- > 0;) {
    uint64_t extent = static_cast<uint64_t>(slot.shape[k]);
    uint64_t stride = contiguous;
    if (!slot.strides.empty()) {
      if (slot.strides[k] < 0) return Status::InvalidArgument("negative stride");
      stride = static_cast<uint64_t>(slot.strides[k]);
    }
    uint64_t term;
    if (extent > 0 && (__builtin_mul_overflow(extent - 1, stride, &term) ||
                       __builtin_add_overflow(last, term, &last))) {
      return Status::InvalidArgument("tensor extent overflows");
    }
    if (extent > 0 && __builtin_mul_overflow(contiguous, extent, &contiguous)) {
      return Status::InvalidArgument("tensor size overflows");
    }
  }
  ByteRange range{slot.offset, 0};
  if (!empty && (__builtin_add_overflow(last, 1, &range.bytes) ||
                 __builtin_mul_overflow(range.bytes, elem, &range.bytes))) {
    return Status::InvalidArgument("tensor extent overflows");
  }
  uint64_t end;
  if (__builtin_add_overflow(range.offset, range.bytes, &end) || end > arena_bytes) {
    return Status::InvalidArgument("tensor [" + std::to_string(range.offset) + ", +" +
                                   std::to_string(range.bytes) + ") leaves the arena of " +
                                   std::to_string(arena_bytes) + " bytes");
  }
  return range;
}

Status ValidateCall(const CallSpec& call, uint64_t arena_bytes) {
  if (call.inputs.size() + call.outputs.size() > kMaxTensorsPerCall) {
    return Status::InvalidArgument("too many tensors in one call");
  }
  for (const auto* list : {&call.inputs, &call.outputs}) {
    for (const TensorSlot& slot : *list) {
      Result<ByteRange> range = SlotRange(slot, arena_bytes);
      if (!range.ok()) return range.status();
    }
  }
  return Status::Ok();
}

void WriteCallSpec(const CallSpec& call, Writer* w) {
  w->U32(static_cast<uint32_t>(call.inputs.size()));
  w->U32(static_cast<uint32_t>(call.outputs.size()));
  for (const auto* list : {&call.inputs, &call.outputs}) {
    for (const TensorSlot& slot : *list) {
      w->I32(static_cast<int32_t>(slot.dtype));
      w->U32(static_cast<uint32_t>(slot.shape.size()));
      for (int64_t d : slot.shape) w->I64(d);
      w->U32(static_cast<uint32_t>(slot.strides.size()));
      for (int64_t s : slot.strides) w->I64(s);
      w->U64(slot.offset);
    }
  }
}

Result<CallSpec> ReadCallSpec(Reader* r, uint64_t arena_bytes) {
  uint32_t n_in, n_out;
  if (!r->U32(&n_in) || !r->U32(&n_out)) return Status::InvalidArgument("truncated call spec");
  if (static_cast<uint64_t>(n_in) + n_out > kMaxTensorsPerCall) {
    return Status::InvalidArgument("too many tensors in one call");
  }
  CallSpec call;
  for (uint32_t i = 0; i < n_in + n_out; ++i) {
    TensorSlot slot;
    int32_t dtype;
    uint32_t ndim, n_strides;
    if (!r->I32(&dtype) || !r->U32(&ndim) || ndim > KOPE_MAX_DIMS) {
      return Status::InvalidArgument("bad tensor header");
    }
    // Checked before the conversion: an out-of-range enum value is undefined.
    if (ElementBytes(dtype) == 0) {
      return Status::InvalidArgument("unknown dtype " + std::to_string(dtype));
    }
    slot.dtype = static_cast<DType>(dtype);
    slot.shape.resize(ndim);
    for (int64_t& d : slot.shape) {
      if (!r->I64(&d)) return Status::InvalidArgument("truncated shape");
    }
    if (!r->U32(&n_strides) || (n_strides != 0 && n_strides != ndim)) {
      return Status::InvalidArgument("bad stride count");
    }
    slot.strides.resize(n_strides);
    for (int64_t& s : slot.strides) {
      if (!r->I64(&s)) return Status::InvalidArgument("truncated strides");
    }
    if (!r->U64(&slot.offset)) return Status::InvalidArgument("truncated offset");
    (i < n_in ? call.inputs : call.outputs).push_back(std::move(slot));
  }
  KOPE_RETURN_IF_ERROR(ValidateCall(call, arena_bytes));
  return call;
}

void WriteReply(const Reply& reply, Writer* w) {
  w->U32(static_cast<uint32_t>(reply.status));
  w->I32(reply.rc);
  w->U64(reply.flushed_bytes);
  w->U64(reply.copy_ns);
  w->U32(static_cast<uint32_t>(reply.ns.size()));
  for (int64_t ns : reply.ns) w->I64(ns);
  w->String(reply.message);
}

Result<Reply> ReadReply(std::string_view payload) {
  Reader r(payload);
  Reply reply;
  uint32_t status, n;
  if (!r.U32(&status) || status > static_cast<uint32_t>(ReplyStatus::kBadRequest) ||
      !r.I32(&reply.rc) || !r.U64(&reply.flushed_bytes) || !r.U64(&reply.copy_ns) || !r.U32(&n) ||
      n > kMaxTimedCalls) {
    return Status::Corruption("malformed reply from kope-runner");
  }
  reply.status = static_cast<ReplyStatus>(status);
  reply.ns.resize(n);
  for (int64_t& ns : reply.ns) {
    if (!r.I64(&ns)) return Status::Corruption("truncated reply from kope-runner");
  }
  if (!r.String(&reply.message, 64 << 10) || !r.AtEnd()) {
    return Status::Corruption("malformed reply message from kope-runner");
  }
  return reply;
}

void WriteHello(const Hello& hello, Writer* w) {
  w->U8(hello.seccomp ? 1 : 0);
  w->U8(hello.rlimits ? 1 : 0);
  std::string notes;
  for (const std::string& note : hello.notes) notes += (notes.empty() ? "" : "\n") + note;
  w->String(notes);
}

Result<Hello> ReadHello(std::string_view payload) {
  Reader r(payload);
  Hello hello;
  uint8_t seccomp, rlimits;
  std::string notes;
  if (!r.U8(&seccomp) || !r.U8(&rlimits) || !r.String(&notes, 64 << 10) || !r.AtEnd()) {
    return Status::Corruption("malformed hello from kope-runner");
  }
  hello.seccomp = seccomp != 0;
  hello.rlimits = rlimits != 0;
  size_t start = 0;
  while (start < notes.size()) {
    size_t end = notes.find('\n', start);
    if (end == std::string::npos) end = notes.size();
    if (end > start) hello.notes.push_back(notes.substr(start, end - start));
    start = end + 1;
  }
  return hello;
}

Status WriteFrame(int sock, MessageType type, std::string_view payload, int pass_fd,
                  Deadline deadline) {
  if (payload.size() > kMaxPayloadBytes) return Status::InvalidArgument("request too large");
  FrameHeader header{static_cast<uint32_t>(type), static_cast<uint32_t>(payload.size())};
  std::string bytes(reinterpret_cast<const char*>(&header), sizeof(header));
  bytes.append(payload);
  size_t sent = 0;
  bool fd_sent = pass_fd < 0;
  while (sent < bytes.size()) {
    pollfd pfd{sock, POLLOUT, 0};
    int ready = poll(&pfd, 1, RemainingMs(deadline));
    if (ready < 0) {
      if (errno == EINTR) continue;
      return Status::IoError(std::string("poll: ") + std::strerror(errno));
    }
    if (ready == 0) return Status::DeadlineExceeded("kope-runner did not take the request in time");
    iovec iov{bytes.data() + sent, bytes.size() - sent};
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))];
    if (!fd_sent) {
      msg.msg_control = control;
      msg.msg_controllen = sizeof(control);
      cmsghdr* c = CMSG_FIRSTHDR(&msg);
      c->cmsg_level = SOL_SOCKET;
      c->cmsg_type = SCM_RIGHTS;
      c->cmsg_len = CMSG_LEN(sizeof(int));
      std::memcpy(CMSG_DATA(c), &pass_fd, sizeof(int));
    }
    ssize_t n = sendmsg(sock, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      if (errno == EPIPE || errno == ECONNRESET) {
        return Status::Unavailable("kope-runner closed the connection");
      }
      return Status::IoError(std::string("sendmsg: ") + std::strerror(errno));
    }
    fd_sent = true;
    sent += static_cast<size_t>(n);
  }
  return Status::Ok();
}

Result<Frame> ReadFrame(int sock, Deadline deadline, int watch_fd) {
  Frame frame;
  FrameHeader header;
  Status s = ReadExactly(sock, reinterpret_cast<char*>(&header), sizeof(header), deadline, watch_fd,
                         &frame);
  auto close_fds = [&frame] {
    for (int fd : frame.fds) close(fd);
    frame.fds.clear();
  };
  if (!s.ok()) {
    close_fds();
    return s;
  }
  if (MessageTypeName(header.type).empty() || header.length > kMaxPayloadBytes) {
    close_fds();
    return Status::Corruption("malformed frame header");
  }
  frame.type = static_cast<MessageType>(header.type);
  frame.payload.resize(header.length);
  s = ReadExactly(sock, frame.payload.data(), header.length, deadline, watch_fd, &frame);
  if (!s.ok()) {
    close_fds();
    return s;
  }
  return frame;
}

}  // namespace kope::runner_protocol
