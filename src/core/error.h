// One error type for the whole engine: a message plus the context a user needs
// to act on it (file, tensor name, expected vs found).
#pragma once
#include <sstream>
#include <stdexcept>
#include <string>

namespace vidax {

class Error : public std::runtime_error {
 public:
  explicit Error(std::string msg) : std::runtime_error(std::move(msg)) {}
};

// An allocation the host could not satisfy (a memory cap, an overcommitted
// machine): an Error, so the CLI exits 1, and its own type so a pipeline can say
// which stage ran out and what to change.
class OutOfMemory : public Error {
 public:
  using Error::Error;
};

// Builds a message from streamed parts: throw Error(msg() << "bad " << x);
class msg {
 public:
  template <class T>
  msg& operator<<(const T& v) {
    os_ << v;
    return *this;
  }
  operator std::string() const { return os_.str(); }
  std::string str() const { return os_.str(); }

 private:
  std::ostringstream os_;
};

}  // namespace vidax

// VIDAX_CHECK(cond, "context " << value): throws vidax::Error when cond is false.
#define VIDAX_CHECK(cond, ...)                                                  \
  do {                                                                          \
    if (!(cond)) throw ::vidax::Error((::vidax::msg() << __VA_ARGS__).str());   \
  } while (0)
