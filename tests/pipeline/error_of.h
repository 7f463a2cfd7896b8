// What a bad input's error says: the message of the vidax::Error that f throws,
// or "(no error)" when it throws none (tests/pipeline).
#pragma once
#include <functional>
#include <string>

#include "core/error.h"

namespace vidax::test {

inline std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace vidax::test
