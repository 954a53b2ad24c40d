// `kope eval --warm`: the client side of the warm evaluation service (eval_service.h), and
// the `kope eval-service` subcommand that runs, lists and stops services.
//
// With --warm (or KOPE_EVAL_WARM=1; --no-warm or KOPE_EVAL_WARM=0 turns it off), `kope eval`
// sends its evaluation to this user's service for this kope build, starting one (detached, in
// a session of its own) when none is running, and prints what the service returns: the same
// text or JSON, on the same streams, with the same exit code as an evaluation in its own
// process. Where no service can be reached or started, it says so and evaluates in its own
// process. A service that ends during the evaluation is an error (exit 2) that says where its
// log is; run again, or with --no-warm.
#ifndef KOPE_SRC_CLI_EVAL_CLIENT_H_
#define KOPE_SRC_CLI_EVAL_CLIENT_H_

#include <CLI/CLI.hpp>
#include <optional>

#include "eval_wire.h"

namespace kope::cli {

struct WarmOptions {
  bool warm = false;
  bool no_warm = false;
  double idle_seconds = 600;  // for a service this call starts
};

// Adds --warm, --no-warm and --warm-idle to `kope eval`.
void AddWarmFlags(CLI::App* eval, WarmOptions* options);

// The exit code of the evaluation done by the warm service, or nullopt where `kope eval` is to
// evaluate in its own process: warm not asked for, `record` (the service does not record),
// the candidate unreadable (the local path reports it), or no service reachable.
// `request.task` and `request.candidate` may be relative; `request.source` is read here.
std::optional<int> EvaluateWarm(const WarmOptions& options, WarmRequest request, bool record);

// The request for `kope eval`'s arguments (a struct with the fields of WarmRequest but the
// source, of the same names).
template <typename EvalArgs>
WarmRequest WarmRequestFrom(const EvalArgs& a) {
  WarmRequest r;
  r.task = a.task;
  r.candidate = a.candidate;
  r.backend = a.backend;
  r.trials = a.trials;
  r.timeout = a.timeout;
  r.json = a.json;
  r.confirm = a.confirm;
  r.no_bubblewrap = a.no_bubblewrap;
  r.quiet = a.quiet;
  r.profile = a.profile;
  r.sanitize = a.sanitize;
  return r;
}

// `kope eval-service`: serve (what --warm starts), --status, --stop.
void RegisterEvalServiceCommand(CLI::App& app, int* exit_code);

}  // namespace kope::cli

#endif  // KOPE_SRC_CLI_EVAL_CLIENT_H_
