#include "pkbw/core/problem.h"

#include "pkbw/core/error.h"

#include <algorithm>
#include <nlohmann/json.hpp>

namespace pkbw {

std::size_t spec_bytes(const TensorSpec& spec) {
    return static_cast<std::size_t>(shape_numel(spec.shape)) * dtype_size(spec.dtype);
}

std::string_view input_mode_name(InputMode mode) {
    return mode == InputMode::Pkb ? "pkb" : "exact";
}

std::optional<InputMode> parse_input_mode(std::string_view text) {
    if (text == "pkb") {
        return InputMode::Pkb;
    }
    if (text == "exact") {
        return InputMode::Exact;
    }
    return std::nullopt;
}

std::string_view collective_kind_name(CollectiveKind kind) {
    switch (kind) {
    case CollectiveKind::None:
        return "none";
    case CollectiveKind::AllReduce:
        return "allreduce";
    case CollectiveKind::AllGather:
        return "allgather";
    case CollectiveKind::ReduceScatter:
        return "reducescatter";
    case CollectiveKind::Broadcast:
        return "broadcast";
    case CollectiveKind::Reduce:
        return "reduce";
    case CollectiveKind::AllToAll:
        return "alltoall";
    case CollectiveKind::Gather:
        return "gather";
    case CollectiveKind::Scatter:
        return "scatter";
    }
    return "none";
}

std::optional<std::string> Problem::check_config(const ProblemConfig& config) const {
    if (config.world_size < 1) {
        return "world size must be at least 1";
    }
    return check_world(config.world_size);
}

std::optional<std::string> Problem::check_world(int) const {
    return std::nullopt;
}

std::map<std::string, double> Problem::params(const ProblemConfig&) const {
    return {};
}

std::map<std::string, std::string> Problem::output_values(const ProblemConfig&, int) const {
    return {};
}

WorkModel Problem::work(const ProblemConfig&) const {
    return {};
}

std::map<std::string, std::string> Problem::checked_output_values(const ProblemConfig& config,
                                                                  int rank) const {
    auto values = output_values(config, rank);
    if (values.empty())
        return values;
    const std::string where = info().stem + " rank " + std::to_string(rank) + ": output value ";
    for (const auto& spec : output_specs(config, rank)) {
        if (values.count(spec.name))
            throw Error(where + "'" + spec.name + "' is also a tensor output");
    }
    for (const auto& [name, text] : values) {
        if (!nlohmann::json::accept(text))
            throw Error(where + "'" + name + "' is not JSON: " + text);
    }
    return values;
}

TieRowsByOutput Problem::tie_rows(const ProblemConfig&, int, const std::vector<Tensor>&) const {
    return {};
}

TieRowsByOutput Problem::checked_tie_rows(const ProblemConfig& config, int rank,
                                          const std::vector<Tensor>& inputs) const {
    TieRowsByOutput ties = tie_rows(config, rank, inputs);
    if (ties.empty())
        return ties;
    const std::string where = info().stem + " rank " + std::to_string(rank) + ": tie rows of ";
    const auto specs = output_specs(config, rank);
    for (auto it = ties.begin(); it != ties.end();) {
        auto& [name, tie] = *it;
        const auto spec =
            std::find_if(specs.begin(), specs.end(), [&](const TensorSpec& s) { return s.name == name; });
        if (spec == specs.end())
            throw Error(where + "'" + name + "': no tensor output has that name");
        if (tie.rows.empty()) {
            it = ties.erase(it);
            continue;
        }
        if (tie.rule.empty())
            throw Error(where + "'" + name + "': the rule text is empty");
        const std::int64_t row_count = spec->shape.empty() ? 1 : spec->shape[0];
        std::sort(tie.rows.begin(), tie.rows.end());
        tie.rows.erase(std::unique(tie.rows.begin(), tie.rows.end()), tie.rows.end());
        for (const std::int64_t row : {tie.rows.front(), tie.rows.back()}) {
            if (row < 0 || row >= row_count)
                throw Error(where + "'" + name + "': row " + std::to_string(row) + " is outside [0, " +
                            std::to_string(row_count) + ")");
        }
        ++it;
    }
    return ties;
}

std::string list_param_key(std::string_view name, int index) {
    return std::string(name) + "[" + std::to_string(index) + "]";
}

std::string list_param_length_key(std::string_view name) {
    return std::string(name) + "[]";
}

void add_list_param(std::map<std::string, double>& params, std::string_view name,
                    const std::vector<double>& values) {
    params[list_param_length_key(name)] = static_cast<double>(values.size());
    for (std::size_t i = 0; i < values.size(); ++i)
        params[list_param_key(name, static_cast<int>(i))] = values[i];
}

std::optional<std::vector<double>> find_list_param(const std::map<std::string, double>& params,
                                                   std::string_view name) {
    const auto length = params.find(list_param_length_key(name));
    if (length == params.end())
        return std::nullopt;
    std::vector<double> values;
    for (int i = 0; i < static_cast<int>(length->second); ++i) {
        const auto it = params.find(list_param_key(name, i));
        if (it == params.end())
            throw Error("list parameter '" + std::string(name) + "' has no element " + std::to_string(i));
        values.push_back(it->second);
    }
    return values;
}

std::vector<Tensor> Problem::build_inputs(const ProblemConfig& config, int rank) const {
    std::vector<Tensor> inputs;
    for (const auto& spec : input_specs(config, rank)) {
        inputs.push_back(Tensor::zeros(spec.dtype, spec.shape));
    }
    make_inputs(config, rank, inputs);
    return inputs;
}

} // namespace pkbw
