// What the key-list tests share (test_wan_keylists, test_ltx2_keys): the data folder of the key
// lists (tests/translate/data/, written by tools/golden's key-list scripts) and the list's header
// lines "# config: {...}" and "# parameters: N".
#pragma once
#include <cstdint>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

namespace vidax::test {

inline std::string data_path(const std::string& name) {
  return std::string(VIDAX_TEST_DATA_DIR) + "/translate/data/" + name;
}

struct KeyListHeader {
  nlohmann::json config;
  int64_t parameters = -1;
};
inline KeyListHeader read_header(const std::string& name) {
  std::ifstream f(data_path(name));
  KeyListHeader h;
  std::string line;
  while (std::getline(f, line) && !line.empty() && line[0] == '#') {
    if (line.rfind("# config: ", 0) == 0) h.config = nlohmann::json::parse(line.substr(10));
    if (line.rfind("# parameters: ", 0) == 0) h.parameters = std::stoll(line.substr(14));
  }
  return h;
}

}  // namespace vidax::test
