// CheckSite: where a candidate's verified calls are checked against the reference, one
// verification strategy per place (internal to the evaluator).
//
//  - In the parent (parent_check.cc): both arenas are the parent's. It draws every trial's
//    inputs into the reference's arena and copies them to the candidate's, hashes them,
//    poisons the outputs and fills the guards before every call, and compares the outputs
//    itself (compare.h).
//  - In the reference runner (reference_check.cc): the reference and the candidate are both
//    PyTorch bridge processes, and the candidate's tensors live in memory the reference shares
//    (on the GPU for a CUDA task). The reference draws the inputs from the parent's secret
//    seed, poisons, compares the candidate's tensors with its own and answers a summary
//    (python/kope_bridge/checker.py): no tensor crosses between host and GPU.
//
// The trial protocol itself (which calls, in what order, what each failure means) is the
// session's, the same for both (verification.cc). A site holds its session, which outlives it.
#ifndef KOPE_SRC_EVAL_CHECK_SITE_H_
#define KOPE_SRC_EVAL_CHECK_SITE_H_

#include <memory>
#include <random>
#include <vector>

#include "session.h"

namespace kope {

class CheckSite {
 public:
  explicit CheckSite(EvalSession& session) : s_(session) {}
  virtual ~CheckSite() = default;
  CheckSite(const CheckSite&) = delete;
  CheckSite& operator=(const CheckSite&) = delete;

  virtual bool in_reference() const = 0;
  // Maps the reference's and the candidate's memory for `layout`. A Status error when the
  // reference's fails; the candidate's mapping otherwise (its failure is the candidate's).
  virtual Result<CallOutcome> Map(const ArenaLayout& layout) = 0;
  // A trial's fresh inputs, or (`perturb`) one element of every input redrawn to a different
  // value: a kernel that keys a cache on a sample of its input replays a stale output then.
  virtual Status DrawInputs(const ArenaLayout& layout, const SizeSet& set, int trial,
                            std::mt19937_64& rng, bool perturb) = 0;
  // A trial's inputs given (captured where the kernel runs), the others drawn as in `trial`.
  virtual Status GiveInputs(const ArenaLayout& layout, const CapturedTrial& given,
                            const SizeSet& set, int trial, std::mt19937_64& rng) = 0;
  // The reference's call on the current inputs (with `summarize`, its outputs described).
  virtual Result<CallOutcome> CallReference(const ArenaLayout& layout, double timeout,
                                            bool summarize) = 0;
  // After a successful reference call: where its outputs lie (none when they stay in the
  // reference runner), with reference_summary set when `summarize`.
  virtual Result<EvalSession::Expected> ReferenceResult(const ArenaLayout& layout,
                                                        const CallOutcome& call,
                                                        bool summarize) = 0;
  // Before a candidate call: its outputs poisoned with `poison`, guards after them.
  virtual Status PoisonOutputs(const ArenaLayout& layout, Poison poison) = 0;
  // After a candidate call: what it left (inputs written, guards damaged, outputs compared).
  virtual Result<EvalSession::CallFindings> Find(const ArenaLayout& layout,
                                                 const EvalSession::Expected& expected,
                                                 const std::vector<Tolerance>& tolerances) = 0;
  // Whether a trial at `set` calls the candidate twice on the same inputs (another poison)
  // before perturbing them.
  virtual bool CallsTwicePerTrial(const SizeSet& set) const = 0;

 protected:
  EvalSession& s_;
};

std::unique_ptr<CheckSite> CheckInParent(EvalSession& session);
std::unique_ptr<CheckSite> CheckInReference(EvalSession& session);

}  // namespace kope

#endif  // KOPE_SRC_EVAL_CHECK_SITE_H_
