// Small files read whole, with errors that name them: a file's bytes, and a JSON document
// (configs, model_index.json, tokenizer files). One place for what each loader did by hand.
#pragma once
#include <nlohmann/json.hpp>
#include <string>

namespace vidax::io {

// The whole file; throws "<who>: cannot open <path>" (who "" leaves the prefix out).
std::string read_text_file(const std::string& path, const std::string& who = "");
// The file parsed as JSON; throws "cannot open <path>" or "<path>: malformed JSON: <parser's reason>",
// prefixed by who when given.
nlohmann::json read_json_file(const std::string& path, const std::string& who = "");

}  // namespace vidax::io
