// The warm evaluation service: `kope eval-service`, which `kope eval --warm` starts on demand
// and then talks to over a Unix socket (eval_wire.h), so that successive one-shot evaluations
// reuse loaded task runners and runners started ahead (warm_evaluator.h).
//
// One service per user, kope build and evaluation environment (eval_service_location.h). It
//  - holds the location's lock file for its whole life (a second service of the same location
//    waits for it, then finds the socket served and leaves);
//  - accepts only peers of its own user (SO_PEERCRED), in a folder only that user can reach;
//  - evaluates one request at a time, on its main thread, in arrival order; a client that
//    arrives while another's evaluation runs is told how many are ahead and waits;
//  - answers "status" and "stop" at once, even while it evaluates (a stop ends the service
//    after the evaluation that runs; the requests still waiting are told to retry);
//  - ends after `idle_seconds` without a request, and when its kope or kope-runner executable
//    changes on disk; on ending it removes its socket first, so that new clients start a new
//    service instead of waiting on this one.
// A client that goes away mid-evaluation does not stop the evaluation (it ends within its
// limits, and its result is dropped). The service writes its log (one line per request) to
// the location's log file.
#ifndef KOPE_SRC_CLI_EVAL_SERVICE_H_
#define KOPE_SRC_CLI_EVAL_SERVICE_H_

#include "eval_service_location.h"

namespace kope::cli {

struct ServiceOptions {
  double idle_seconds = 600;
};

// Serves until idle, stopped, or the executables changed; the process exit code (0, or 1
// when the service could not listen).
int RunEvalService(const ServiceLocation& where, const ServiceOptions& options);

}  // namespace kope::cli

#endif  // KOPE_SRC_CLI_EVAL_SERVICE_H_
