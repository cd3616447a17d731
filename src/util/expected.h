// A small std::expected stand-in (C++20 has none): low layers return Expected<T>,
// the CLI catches once and prints `tailor: error: <message>`.
#pragma once
#include <string>
#include <utility>
#include <variant>

namespace tailor {

/// What went wrong, in one line that names the file, offset or field.
struct Error {
  std::string message;
};

template <typename T>
class Expected {
 public:
  Expected(T value) : m_v(std::in_place_index<0>, std::move(value)) {}
  Expected(Error error) : m_v(std::in_place_index<1>, std::move(error)) {}

  bool has_value() const { return m_v.index() == 0; }
  explicit operator bool() const { return has_value(); }
  T& value() & { return std::get<0>(m_v); }
  const T& value() const& { return std::get<0>(m_v); }
  T&& value() && { return std::get<0>(std::move(m_v)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  const Error& error() const { return std::get<1>(m_v); }

 private:
  std::variant<T, Error> m_v;
};

template <>
class Expected<void> {
 public:
  Expected() = default;
  Expected(Error error) : m_error(std::move(error)), m_ok(false) {}
  bool has_value() const { return m_ok; }
  explicit operator bool() const { return m_ok; }
  const Error& error() const { return m_error; }

 private:
  Error m_error;
  bool m_ok = true;
};

inline Error make_error(std::string message) { return Error{std::move(message)}; }

}  // namespace tailor

/// TAILOR_TRY(var, expr): assign the value of an Expected or return its error.
#define TAILOR_TRY(var, expr)                       \
  auto var##_result_ = (expr);                      \
  if (!var##_result_) return var##_result_.error(); \
  auto var = std::move(var##_result_).value()

/// TAILOR_TRY_VOID(expr): return the error of an Expected whose value is not wanted
/// (Expected<void>); one statement, so it may follow an `if`.
#define TAILOR_TRY_VOID(expr)                                                \
  do {                                                                       \
    if (auto tailor_try_ = (expr); !tailor_try_) return tailor_try_.error(); \
  } while (0)
