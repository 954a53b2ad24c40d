// The warm evaluation service's wire format: length-prefixed JSON frames over a local stream
// socket (kope eval --warm and kope eval-service; eval_client.h, eval_service.h).
//
// A frame is a 4-byte big-endian length, then that many bytes of UTF-8 JSON (one object).
// Frames above kMaxFrameBytes are refused on both sides. Every message has a "type":
//   client -> service: "eval" (the request, WarmRequestToJson), "status", "stop";
//   service -> client: "queued" {ahead}, "started", "progress" {line}, "result" {exit_code,
//   stdout, stderr}, "status" {...}, "error" {message, retry}.
// An "error" with retry = true means the request never ran (the service was stopping): the
// client may send it again to a new service. Reading and writing are blocking; a peer that
// closed the connection is Unavailable, so that a caller can tell a dead service from a bad
// frame (InvalidArgument or Corruption).
#ifndef KOPE_SRC_CLI_EVAL_WIRE_H_
#define KOPE_SRC_CLI_EVAL_WIRE_H_

#include <nlohmann/json.hpp>
#include <string>

#include "kope/base/status.h"

namespace kope::cli {

inline constexpr size_t kMaxFrameBytes = size_t{64} << 20;
inline constexpr int kWireVersion = 1;

// Writes one frame; never raises SIGPIPE (a closed peer is Unavailable).
Status WriteFrame(int fd, const nlohmann::json& message);
// Reads one frame. Unavailable when the peer closed the connection before a frame began (or
// within one: then the message says the frame was cut short); InvalidArgument for a length
// above the limit; Corruption for bytes that are not a JSON object.
Result<nlohmann::json> ReadFrame(int fd);

// What `kope eval` sends: everything about one evaluation that the service needs. Paths are
// absolute (the client resolves them in its own working folder).
struct WarmRequest {
  std::string task;       // task folder or KernelBench problem file
  std::string candidate;  // the candidate file (its name names the candidate)
  std::string source;     // the candidate's text, as the client read it
  std::string backend = "auto";
  int trials = 5;
  double timeout = 10;
  bool json = false;
  bool confirm = false;
  bool no_bubblewrap = false;
  bool quiet = false;
  bool profile = false;
  bool sanitize = false;
};
nlohmann::json WarmRequestToJson(const WarmRequest& request);
// Checks every field as `kope eval`'s own options are checked (InvalidArgument otherwise).
Result<WarmRequest> WarmRequestFromJson(const nlohmann::json& message);

}  // namespace kope::cli

#endif  // KOPE_SRC_CLI_EVAL_WIRE_H_
