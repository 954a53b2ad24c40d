// A trace of the requests the parent makes of its runners, for finding where an evaluation's
// time goes (docs/EVALUATION.md, "Tracing requests").
//
// Contract: when the environment variable KOPE_TRACE_REQUESTS names a file, every request a
// Runner makes appends one tab-separated line to it (a header first when the file is empty):
// seconds since the first traced request, the runner's pid, the message type, the bytes of the
// arena a MAP, MAP_SHARED or SHARE concerns (read from its `payload`; for any other request
// `arena_bytes`, the arena the runner last mapped), the parent's wall time around the request,
// the kernel time and the copy time the runner reported (milliseconds), and the outcome. Lines
// from several threads do not interleave. Unset (the default), tracing costs one load of a
// flag. A file that cannot be opened disables the trace with one message on stderr.
#ifndef KOPE_RUNNER_REQUEST_TRACE_H_
#define KOPE_RUNNER_REQUEST_TRACE_H_

#include <sys/types.h>

#include <cstdint>
#include <string_view>

#include "kope/runner/runner.h"
#include "protocol.h"

namespace kope::runner_internal {

void TraceRequest(pid_t pid, runner_protocol::MessageType type, std::string_view payload,
                  uint64_t arena_bytes, const CallOutcome& outcome);

}  // namespace kope::runner_internal

#endif  // KOPE_RUNNER_REQUEST_TRACE_H_
