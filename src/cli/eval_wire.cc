#include "eval_wire.h"

#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <set>

namespace kope::cli {
namespace {

using nlohmann::json;

Status WriteAll(int fd, const char* data, size_t size) {
  while (size > 0) {
    ssize_t n = send(fd, data, size, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EPIPE || errno == ECONNRESET)) {
      return Status::Unavailable("the other side closed the connection");
    }
    if (n < 0) return Status::IoError(std::string("cannot write a frame: ") + strerror(errno));
    data += n;
    size -= static_cast<size_t>(n);
  }
  return Status::Ok();
}

// Reads exactly `size` bytes; `*got` says how many arrived before the peer closed.
Status ReadAll(int fd, char* data, size_t size, size_t* got) {
  *got = 0;
  while (*got < size) {
    ssize_t n = read(fd, data + *got, size - *got);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == ECONNRESET) n = 0;
    if (n < 0) return Status::IoError(std::string("cannot read a frame: ") + strerror(errno));
    if (n == 0) return Status::Unavailable("the other side closed the connection");
    *got += static_cast<size_t>(n);
  }
  return Status::Ok();
}

Status CheckKeys(const json& m) {
  static const std::set<std::string> known = {
      "type",    "version", "task",    "candidate",     "source", "backend", "trials",
      "timeout", "json",    "confirm", "no_bubblewrap", "quiet",  "profile", "sanitize"};
  for (const auto& [key, value] : m.items()) {
    if (known.count(key) == 0) return Status::InvalidArgument("unknown request field " + key);
  }
  return Status::Ok();
}

}  // namespace

Status WriteFrame(int fd, const json& message) {
  const std::string body = message.dump(-1, ' ', false, json::error_handler_t::replace);
  if (body.size() > kMaxFrameBytes) {
    return Status::InvalidArgument("a message of " + std::to_string(body.size()) +
                                   " bytes is above the frame limit");
  }
  const uint32_t n = static_cast<uint32_t>(body.size());
  const char header[4] = {static_cast<char>(n >> 24), static_cast<char>(n >> 16),
                          static_cast<char>(n >> 8), static_cast<char>(n)};
  KOPE_RETURN_IF_ERROR(WriteAll(fd, header, sizeof header));
  return WriteAll(fd, body.data(), body.size());
}

Result<json> ReadFrame(int fd) {
  unsigned char header[4];
  size_t got = 0;
  Status s = ReadAll(fd, reinterpret_cast<char*>(header), sizeof header, &got);
  if (!s.ok() && got > 0) return Status::Unavailable("a frame was cut short (its length)");
  KOPE_RETURN_IF_ERROR(s);
  const size_t n = (size_t{header[0]} << 24) | (size_t{header[1]} << 16) |
                   (size_t{header[2]} << 8) | size_t{header[3]};
  if (n > kMaxFrameBytes) {
    return Status::InvalidArgument("a frame of " + std::to_string(n) + " bytes is above the limit");
  }
  std::string body(n, '\0');
  s = ReadAll(fd, body.data(), n, &got);
  if (!s.ok() && s.code() == StatusCode::kUnavailable) {
    return Status::Unavailable("a frame was cut short (" + std::to_string(got) + " of " +
                               std::to_string(n) + " bytes)");
  }
  KOPE_RETURN_IF_ERROR(s);
  json message = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (message.is_discarded() || !message.is_object() || !message.contains("type") ||
      !message["type"].is_string()) {
    return Status::Corruption("a frame is not a JSON object with a type");
  }
  return message;
}

json WarmRequestToJson(const WarmRequest& r) {
  return {{"type", "eval"},           {"version", kWireVersion}, {"task", r.task},
          {"candidate", r.candidate}, {"source", r.source},      {"backend", r.backend},
          {"trials", r.trials},       {"timeout", r.timeout},    {"json", r.json},
          {"confirm", r.confirm},     {"quiet", r.quiet},        {"no_bubblewrap", r.no_bubblewrap},
          {"profile", r.profile},     {"sanitize", r.sanitize}};
}

Result<WarmRequest> WarmRequestFromJson(const json& m) {
  KOPE_RETURN_IF_ERROR(CheckKeys(m));
  WarmRequest r;
  try {
    if (m.at("version").get<int>() != kWireVersion) {
      return Status::InvalidArgument("the request is of another wire version");
    }
    r.task = m.at("task").get<std::string>();
    r.candidate = m.at("candidate").get<std::string>();
    r.source = m.at("source").get<std::string>();
    r.backend = m.at("backend").get<std::string>();
    r.trials = m.at("trials").get<int>();
    r.timeout = m.at("timeout").get<double>();
    r.json = m.at("json").get<bool>();
    r.confirm = m.at("confirm").get<bool>();
    r.quiet = m.at("quiet").get<bool>();
    r.no_bubblewrap = m.at("no_bubblewrap").get<bool>();
    r.profile = m.at("profile").get<bool>();
    r.sanitize = m.at("sanitize").get<bool>();
  } catch (const json::exception& e) {
    return Status::InvalidArgument(std::string("a bad request: ") + e.what());
  }
  // The same bounds as kope eval's options.
  if (r.trials < 5 || r.trials > 1000) return Status::InvalidArgument("trials out of [5, 1000]");
  if (!(r.timeout >= 0.1 && r.timeout <= 3600)) {
    return Status::InvalidArgument("timeout out of [0.1, 3600]");
  }
  if (r.backend != "cpu" && r.backend != "cuda" && r.backend != "auto") {
    return Status::InvalidArgument("backend is not cpu, cuda or auto");
  }
  if (r.task.empty() || r.task[0] != '/' || r.candidate.empty() || r.candidate[0] != '/') {
    return Status::InvalidArgument("task and candidate must be absolute paths");
  }
  return r;
}

}  // namespace kope::cli
