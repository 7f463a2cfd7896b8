#include "io/text_file.h"

#include <fstream>
#include <iterator>

#include "core/error.h"

namespace vidax::io {

std::string read_text_file(const std::string& path, const std::string& who) {
  std::ifstream f(path, std::ios::binary);
  VIDAX_CHECK(f, (who.empty() ? "" : who + ": ") << "cannot open " << path);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

nlohmann::json read_json_file(const std::string& path, const std::string& who) {
  const std::string text = read_text_file(path, who);
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw Error(msg() << (who.empty() ? "" : who + ": ") << path << ": malformed JSON: " << e.what());
  }
}

}  // namespace vidax::io
