#include "pkbw/core/rank_config.h"

#include "pkbw/core/error.h"

#include <fstream>
#include <sstream>

namespace pkbw {
namespace {

using nlohmann::json;

template <class T>
T field(const json& object, const char* name, const std::string& source, T fallback, bool required = false) {
    const auto it = object.find(name);
    if (it == object.end()) {
        if (required) {
            throw FormatError(source + ": missing field '" + name + "'");
        }
        return fallback;
    }
    try {
        return it->get<T>();
    } catch (const json::exception&) {
        throw FormatError(source + ": field '" + name + "' has the wrong type");
    }
}

} // namespace

ProblemConfig RankConfig::problem_config(int trial) const {
    ProblemConfig config;
    config.world_size = world_size;
    config.m = m;
    config.n = n;
    config.dtype = dtype;
    config.trial = trial;
    config.seed = seed;
    config.input_mode = input_mode;
    return config;
}

RankConfig parse_rank_config(const json& j, const std::string& source, bool for_rank_program) {
    if (!j.is_object()) {
        throw FormatError(source + ": the configuration must be a JSON object");
    }
    RankConfig c;
    c.version = field<int>(j, "version", source, 1);
    if (c.version != 1) {
        throw FormatError(source + ": field 'version' is " + std::to_string(c.version) +
                          "; this pkbw-rank reads 1");
    }
    c.run_id = field<long long>(j, "run_id", source, 0);
    c.mode = field<std::string>(j, "mode", source, "eval");
    if (c.mode != status::kModeDryrun && c.mode != status::kModeEval && c.mode != status::kModePerf &&
        c.mode != status::kModeCalibrate) {
        throw FormatError(source + ": field 'mode' must be dryrun, eval, perf or calibrate, not '" + c.mode +
                          "'");
    }
    c.problem =
        field<std::string>(j, "problem", source, "", for_rank_program && c.mode != status::kModeCalibrate);
    if (const auto perf = j.find("perf"); perf != j.end() && !perf->is_null()) {
        if (!perf->is_object()) {
            throw FormatError(source + ": field 'perf' must be an object");
        }
        c.perf = true;
        c.perf_options = *perf;
    }
    c.perf = c.perf || c.mode == status::kModePerf;
    c.backend = field<std::string>(j, "backend", source, "host");
    if (c.backend != "cuda" && c.backend != "host") {
        throw FormatError(source + ": field 'backend' must be cuda or host, not '" + c.backend + "'");
    }
    c.world_size = field<int>(j, "world_size", source, 1, true);
    c.m = field<std::int64_t>(j, "m", source, 1024);
    c.n = field<std::int64_t>(j, "n", source, 1024);
    const auto dtype_text = field<std::string>(j, "dtype", source, "bf16");
    const auto dtype = parse_dtype(dtype_text);
    if (!dtype) {
        throw FormatError(source + ": field 'dtype' names an unknown dtype '" + dtype_text + "'");
    }
    c.dtype = *dtype;
    c.trials = field<int>(j, "trials", source, 5);
    // 0 trials: timing only, for a perf run's later launches (its first launch checked correctness,
    // and every timed call is checked in any case).
    const bool later_launch =
        j.contains("perf") && j["perf"].is_object() && j["perf"].value("launch_index", 0) > 0;
    if (c.trials < (later_launch ? 0 : 1)) {
        throw FormatError(source + ": field 'trials' must be at least 1" +
                          std::string(later_launch ? " (0 in a perf run's later launch)" : ""));
    }
    c.seed = field<std::uint64_t>(j, "seed", source, 42);
    const auto mode_text = field<std::string>(j, "input_mode", source, "pkb");
    const auto input_mode = parse_input_mode(mode_text);
    if (!input_mode) {
        throw FormatError(source + ": field 'input_mode' must be pkb or exact");
    }
    c.input_mode = *input_mode;
    c.atol = field<double>(j, "atol", source, kPkbTolerance);
    c.rtol = field<double>(j, "rtol", source, kPkbTolerance);
    c.all_trials = field<bool>(j, "all_trials", source, false);
    c.keep_outputs = field<bool>(j, "keep_outputs", source, false);
    c.keep_inputs = field<bool>(j, "keep_inputs", source, false);
    c.dryrun_side = field<std::string>(j, "dryrun_side", source, "candidate");
    if (c.dryrun_side != "reference" && c.dryrun_side != "candidate") {
        throw FormatError(source + ": field 'dryrun_side' must be reference or candidate");
    }
    c.reference_library = field<std::string>(j, "reference_library", source, "");
    c.candidate_library = field<std::string>(j, "candidate_library", source, "");
    c.output_dir = field<std::string>(j, "output_dir", source, "", for_rank_program);
    if (for_rank_program && c.runs_reference() && c.reference_library.empty()) {
        throw FormatError(source + ": field 'reference_library' is required for this mode");
    }
    if (for_rank_program && c.runs_candidate() && c.candidate_library.empty()) {
        throw FormatError(source + ": field 'candidate_library' is required for this mode");
    }
    c.extra = j;
    return c;
}

RankConfig load_rank_config(const std::string& path) {
    std::ifstream in(path);
    if (!in) {
        throw FormatError(path + ": cannot open the rank configuration");
    }
    std::stringstream text;
    text << in.rdbuf();
    json j = json::parse(text.str(), nullptr, false);
    if (j.is_discarded()) {
        throw FormatError(path + ": not valid JSON");
    }
    return parse_rank_config(j, path);
}

json to_json(const RankConfig& c) {
    json j = c.extra.is_object() ? c.extra : json::object();
    j.update({{"version", c.version},
              {"run_id", c.run_id},
              {"problem", c.problem},
              {"mode", c.mode},
              {"backend", c.backend},
              {"world_size", c.world_size},
              {"m", c.m},
              {"n", c.n},
              {"dtype", dtype_name(c.dtype)},
              {"trials", c.trials},
              {"seed", c.seed},
              {"input_mode", input_mode_name(c.input_mode)},
              {"atol", c.atol},
              {"rtol", c.rtol},
              {"all_trials", c.all_trials},
              {"keep_outputs", c.keep_outputs},
              {"keep_inputs", c.keep_inputs},
              {"dryrun_side", c.dryrun_side},
              {"output_dir", c.output_dir}});
    if (!c.reference_library.empty())
        j["reference_library"] = c.reference_library;
    if (!c.candidate_library.empty())
        j["candidate_library"] = c.candidate_library;
    if (c.perf) {
        j["perf"] = c.perf_options.is_object() ? c.perf_options : json::object();
    }
    return j;
}

} // namespace pkbw
