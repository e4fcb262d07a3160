// `pkbw problems --json`: what a reader (the GUI) needs to show the problems without a source tree of
// its own, found through the same data layout the runs use (locate.h). docs/cli.md "pkbw problems".
#pragma once

#include <nlohmann/json.hpp>

namespace pkbw::cli {

// One object per problem, in id order: id, stem, category, title, description, atol, rtol, folder
// (absolute, "" when no data layout is found), files ({"reference.cu": path, ...} of those present).
nlohmann::json problems_json();

} // namespace pkbw::cli
