// Where a PKB run's parts come from (run_pkb.cpp, run_check.cpp): the checkout's problem, the
// candidate's file, the interpreter, the rank script, the ranks' multicast switches. docs/pkb-interop.md.
#pragma once

#include "locate.h"
#include "pkbw/core/dtype.h"
#include "pkbw/core/problem.h"
#include "run.h"

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace pkbw::cli::detail {

namespace fs = std::filesystem;

struct PkbProblem {
    int id = 0;
    std::string stem;
    fs::path reference; // <checkout>/reference/<stem>.py
};

// The interpreter the ranks run under (docs/pkb-interop.md, "Which Python"): --python, else
// $PKBW_PYTHON, as given; else the first of the checkout's .venv/bin/python and each python3 and
// python on PATH (in PATH's order) that imports torch.
struct PythonChoice {
    fs::path path;                  // empty: none found (error says why)
    std::string by;                 // "--python", "$PKBW_PYTHON", ".venv", "PATH"
    std::string how;                // how it was chosen, in words, for the run's output
    std::vector<std::string> tried; // "PATH (why not)" of those passed over
    std::string error;
};

// The candidate's file (docs/pkb-interop.md): a .py --solution, refused when its name names another
// of the checkout's problems (unless --ignore-name); else, in --solutions-dir, the
// <n>_<name>_<backend>.py file the sweep's name rules place at the problem (a folder numbered as PKB's
// history is: 41_ddp_cuda.py for HEAD's 40_ddp), the backend from --solution NAME, else the folder's name.
struct PkbSolution {
    std::string path, backend = "cuda", error, note;
};

// PKB's resolve_problem (utils/problem_id.py): digits resolve to the first reference/<n>_*.py in sorted
// order, anything else is a stem (".py" stripped). The id is the stem's leading digits.
std::optional<PkbProblem> resolve_pkb_problem(const fs::path& checkout, std::string arg, std::string& error);
// torch's name of a dtype PKB's worker takes ("bfloat16"), "" for one it does not.
std::string torch_dtype_name(DType dtype);
PythonChoice choose_python(const std::string& option, const fs::path& checkout);
// The rank program: engine/python/ in a source tree, python/ under share/pkbw when installed.
fs::path rank_script(const DataLayout& layout);
// The ranks' multicast switches (docs/pkb-interop.md, "multicast").
std::map<std::string, std::string> multicast_environment(bool allow);
// Why a PKB run of `problem` at `world` ranks is refused before launch (no shape of the problem runs
// at that world size: 49 at W = 1), or nothing. PKB's reference would fail there as the solution
// would, so the failure is not the solution's (run_pkb.cpp and run_check.cpp say the same).
std::optional<std::string> pkb_world_refusal(const Problem* problem, int world);
// The candidate's file: a .py --solution (refused when named for another of the checkout's problems),
// else the file of --solutions-dir the sweep's name rules place at the problem.
PkbSolution find_pkb_solution(const RunOptions& options, const fs::path& checkout, const PkbProblem& problem);

} // namespace pkbw::cli::detail
