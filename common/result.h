#pragma once
/// @file result.h
/// Error handling for control-path code: Status (ok or a message) and Result<T> (a value or a
/// message). The data path never uses these; it counts drops instead.

#include <string>
#include <utility>
#include <variant>

namespace rocefab {

class [[nodiscard]] Status {
 public:
  Status() = default;
  static Status Error(std::string msg) { return Status(std::move(msg)); }
  bool ok() const { return !has_error_; }
  const std::string& message() const { return msg_; }

 private:
  explicit Status(std::string msg) : has_error_(true), msg_(std::move(msg)) {}
  bool has_error_ = false;
  std::string msg_;
};

template <class T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}  // NOLINT: implicit by design
  Result(Status err) : v_(std::move(err)) {}  // NOLINT: must be an error status
  static Result Error(std::string msg) { return Result(Status::Error(std::move(msg))); }
  bool ok() const { return std::holds_alternative<T>(v_); }
  const T& value() const& { return std::get<T>(v_); }
  T& value() & { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }
  const std::string& message() const {
    static const std::string kEmpty;
    return ok() ? kEmpty : std::get<Status>(v_).message();
  }
  Status status() const { return ok() ? Status() : std::get<Status>(v_); }

 private:
  std::variant<T, Status> v_;
};

}  // namespace rocefab
