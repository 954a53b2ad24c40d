// Status and Result<T>: how kope reports expected failures.
//
// A Status is either ok or carries a code and a human-readable message. A
// Result<T> holds either a T or a non-ok Status. Functions on component APIs
// return these instead of throwing; exceptions never cross a public API.
// Both types are cheap to move and are not thread-safe to mutate concurrently.
#ifndef KOPE_BASE_STATUS_H_
#define KOPE_BASE_STATUS_H_

#include <cassert>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace kope {

enum class StatusCode {
  kOk = 0,
  kInvalidArgument,     // the caller's input is wrong (a task file, a flag)
  kNotFound,            // a file, a node, a symbol that should exist does not
  kIoError,             // the OS refused: open, write, mmap, spawn
  kCorruption,          // stored data is not what kope wrote
  kUnavailable,         // something outside is unreachable or busy; retrying may help
  kDeadlineExceeded,    // a time limit passed
  kCancelled,           // the user or a parent stopped the work
  kFailedPrecondition,  // the system is not in a state to do this
  kInternal,            // a bug in kope
};

std::string_view StatusCodeName(StatusCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status Ok() { return Status(); }
  static Status InvalidArgument(std::string m) {
    return {StatusCode::kInvalidArgument, std::move(m)};
  }
  static Status NotFound(std::string m) { return {StatusCode::kNotFound, std::move(m)}; }
  static Status IoError(std::string m) { return {StatusCode::kIoError, std::move(m)}; }
  static Status Corruption(std::string m) { return {StatusCode::kCorruption, std::move(m)}; }
  static Status Unavailable(std::string m) { return {StatusCode::kUnavailable, std::move(m)}; }
  static Status DeadlineExceeded(std::string m) {
    return {StatusCode::kDeadlineExceeded, std::move(m)};
  }
  static Status Cancelled(std::string m) { return {StatusCode::kCancelled, std::move(m)}; }
  static Status FailedPrecondition(std::string m) {
    return {StatusCode::kFailedPrecondition, std::move(m)};
  }
  static Status Internal(std::string m) { return {StatusCode::kInternal, std::move(m)}; }

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  // "InvalidArgument: message", or "OK".
  std::string ToString() const;
  // The same status with `context + ": "` put in front of the message.
  Status WithContext(std::string_view context) const;

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : value_(std::move(value)) {}         // NOLINT(google-explicit-constructor)
  Result(Status status) : status_(std::move(status)) {  // NOLINT(google-explicit-constructor)
    assert(!status_.ok() && "a Result built from a Status must carry an error");
  }

  bool ok() const { return value_.has_value(); }
  const Status& status() const { return status_; }
  T& value() & {
    assert(ok());
    return *value_;
  }
  const T& value() const& {
    assert(ok());
    return *value_;
  }
  T&& value() && {
    assert(ok());
    return std::move(*value_);
  }
  // The value, or `fallback` when this holds an error.
  template <typename U>
  T value_or(U&& fallback) const& {
    return value_.value_or(std::forward<U>(fallback));
  }
  template <typename U>
  T value_or(U&& fallback) && {
    return std::move(value_).value_or(std::forward<U>(fallback));
  }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

 private:
  std::optional<T> value_;
  Status status_;
};

}  // namespace kope

// Returns early from the enclosing function when `expr` is a non-ok Status.
#define KOPE_RETURN_IF_ERROR(expr)               \
  do {                                           \
    ::kope::Status kope_status_ = (expr);        \
    if (!kope_status_.ok()) return kope_status_; \
  } while (0)

#define KOPE_CONCAT_INNER_(a, b) a##b
#define KOPE_CONCAT_(a, b) KOPE_CONCAT_INNER_(a, b)
// Declares `lhs` from a Result's value, or returns its Status.
#define KOPE_ASSIGN_OR_RETURN(lhs, expr) \
  KOPE_ASSIGN_OR_RETURN_IMPL_(KOPE_CONCAT_(kope_result_, __LINE__), lhs, expr)
#define KOPE_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr) \
  auto tmp = (expr);                                \
  if (!tmp.ok()) return tmp.status();               \
  lhs = std::move(tmp).value()

#endif  // KOPE_BASE_STATUS_H_
