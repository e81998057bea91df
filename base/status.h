// Status and Result<T>: expected failures as values.
//
// A Status is ok or carries a code and a message that a user can read. Result<T> holds
// either a T or a non-ok Status. Both are plain values: copy them freely, share none
// between threads without synchronisation (thread-compatible).
#pragma once

#include <cassert>
#include <string>
#include <utility>
#include <variant>

namespace rw {

class Status {
 public:
  enum class Code {
    kOk,
    kInvalidInput,    // bad payload, bad option, bad configuration
    kNotFound,        // missing table, column, projector
    kConnection,      // server unreachable or connection lost: retry may help
    kRetryable,       // deadlock, lock-wait timeout: retry the transaction
    kDatabase,        // any other server error
    kBusy,            // another rewind holds the lock
    kCancelled,       // stopped by a signal or by another stage's failure
    kInternal,
  };

  Status() = default;
  static Status Ok() { return {}; }
  static Status Error(Code code, std::string message) { return Status(code, std::move(message)); }
  static Status InvalidInput(std::string m) { return Error(Code::kInvalidInput, std::move(m)); }
  static Status NotFound(std::string m) { return Error(Code::kNotFound, std::move(m)); }
  static Status Internal(std::string m) { return Error(Code::kInternal, std::move(m)); }

  bool ok() const { return code_ == Code::kOk; }
  Code code() const { return code_; }
  const std::string& message() const { return message_; }

  // Prefixes the message with context ("projector visits_per_day: ...").
  Status With(const std::string& context) const {
    return ok() ? *this : Status(code_, context + ": " + message_);
  }

 private:
  Status(Code code, std::string message) : code_(code), message_(std::move(message)) {}
  Code code_ = Code::kOk;
  std::string message_;
};

template <typename T>
class Result {
 public:
  Result(T value) : v_(std::move(value)) {}  // NOLINT: implicit by design
  Result(Status status) : v_(std::move(status)) { assert(!std::get<Status>(v_).ok()); }  // NOLINT

  bool ok() const { return std::holds_alternative<T>(v_); }
  // REQUIRES: ok()
  T& value() & { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }
  const T& value() const& { return std::get<T>(v_); }
  T* operator->() { return &value(); }
  T& operator*() { return value(); }
  // REQUIRES: !ok()
  const Status& status() const { return std::get<Status>(v_); }

 private:
  std::variant<T, Status> v_;
};

}  // namespace rw
