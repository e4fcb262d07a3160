// `pkbw import-pkb DIR`: stores PKB's downloaded artifacts (a logs folder or one problem_<stem>
// folder) as runs in the store, so that the CLI and GUI show PKB's own evaluations beside pkbw's.
// docs/pkb-interop.md describes what each run holds.
#pragma once

#include <string>

namespace pkbw {

// Imports every run found under `dir` into the store at `store_path`. A run already imported (same
// backend, problem and folder) is skipped. Prints one line per run, or with `json` one JSON object
// {"imported": [...], "skipped": [...], "warnings": [...]} on stdout. Returns 0 when the folder was
// read (whatever the runs' verdicts), 1 on an error (printed to stderr, naming the file).
// `generation` labels every imported run (a solutions_<...> folder name, parsed as PKB names them);
// empty: taken from a solutions_<...> folder in `dir`'s path, when there is one.
int run_import_pkb(const std::string& store_path, const std::string& dir, bool json,
                   const std::string& generation = {});

} // namespace pkbw
