// A parameterized test's name from free text (a file stem, a precision): gtest
// names allow only letters, digits and '_', so every other character becomes '_'.
#pragma once
#include <cctype>
#include <string>

namespace vidax::test {

inline std::string gtest_name(std::string s) {
  for (char& ch : s)
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  return s;
}

}  // namespace vidax::test
