// A problem as data: what each rank receives and returns, its tolerance, its parameters and its work
// model. Each problem folder under problems/ fills in one Problem; one harness (the engine) owns
// launching, timing and checking, as nccl-tests does with its per-collective descriptors.
#pragma once

#include "pkbw/core/compare.h"
#include "pkbw/core/tensor.h"
#include "pkbw/core/tie_rows.h"

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace pkbw {

// How inputs are drawn. `Pkb` reproduces PKB's distributions (constants for problems 1-8);
// `Exact` draws values whose sums are exact in any order (small integers scaled by a power of two),
// so collectives can be checked bit for bit.
enum class InputMode { Pkb, Exact };

std::string_view input_mode_name(InputMode mode);
std::optional<InputMode> parse_input_mode(std::string_view text);

// Everything that determines a rank's inputs and output shapes.
struct ProblemConfig {
    int world_size = 2;
    std::int64_t m = 1024;
    std::int64_t n = 1024;
    DType dtype = DType::BF16;
    int trial = 0;
    std::uint64_t seed = 42;
    InputMode input_mode = InputMode::Pkb;
};

struct TensorSpec {
    std::string name;
    DType dtype = DType::F32;
    Shape shape;
    // An output whose leading dimension is variable (docs/solution-abi.md "Variable-length outputs"):
    // shape[0] is the upper bound allocated; the solution reports the rows it filled.
    bool variable_length = false;
};

// The bytes a tensor of `spec` holds (its upper bound, for a variable-length output).
std::size_t spec_bytes(const TensorSpec& spec);

// The collective a problem's traffic resembles, for nccl-tests' algbw/busbw formulas.
enum class CollectiveKind {
    None,
    AllReduce,
    AllGather,
    ReduceScatter,
    Broadcast,
    Reduce,
    AllToAll,
    Gather,
    Scatter
};
std::string_view collective_kind_name(CollectiveKind kind);

// Bytes and FLOPs one call moves and computes, for bandwidth and roofline figures.
struct WorkModel {
    CollectiveKind collective = CollectiveKind::None;
    // nccl-tests' S (docs/perf.md): the byte count algbw divides by time.
    double collective_bytes = 0;
    double flops = 0;        // per rank
    double memory_bytes = 0; // per rank: inputs read once, outputs written once
};

struct ProblemInfo {
    int id = 0;
    std::string stem;     // "2_allgather"
    std::string category; // CC, FCC, MoE, SCP, TI, DOM
    std::string title;    // one line
    std::string description;
    double atol = kPkbTolerance;
    double rtol = kPkbTolerance;
    // The problem's reference mutates some inputs in place (PKB 21, 22, 30, 63, 73): the engine then
    // does not flag a candidate that changes its inputs.
    bool mutates_inputs = false;
    // Candidates of this problem are expected to use custom kernels rather than calling NCCL.
    bool expects_custom_kernels = true;
};

class Problem {
public:
    virtual ~Problem() = default;
    virtual const ProblemInfo& info() const = 0;

    // Why `config` is not a valid configuration for this problem (e.g. W must divide 512), or nullopt.
    virtual std::optional<std::string> check_config(const ProblemConfig& config) const;
    // Why no shape of this problem runs on `world_size` ranks (49: top-2 over E = W experts needs W >= 2),
    // or nullopt: a rule of the world size alone, which PKB's reference obeys too, so that a PKB run of
    // the same problem (its shapes are PKB's, not pkbw's) is refused by it before its ranks start rather
    // than failing in the solution's code. check_config includes it (the default does; an override of
    // both calls it: tests/problems hold every problem to this).
    virtual std::optional<std::string> check_world(int world_size) const;
    virtual std::vector<TensorSpec> input_specs(const ProblemConfig& config, int rank) const = 0;
    virtual std::vector<TensorSpec> output_specs(const ProblemConfig& config, int rank) const = 0;
    // Fills `inputs` (allocated by the caller from input_specs, in that order). Deterministic in
    // (problem, config, rank); identical on every backend.
    virtual void make_inputs(const ProblemConfig& config, int rank, std::vector<Tensor>& inputs) const = 0;
    // Scalar parameters a solution reads with ctx.param(name) (root rank, eps, ...). List-valued ones
    // (split sizes, counts) are added with add_list_param and read with ctx.param_list(name).
    virtual std::map<std::string, double> params(const ProblemConfig& config) const;
    // Fixed non-tensor leaves of this rank's output (PKB's None, torch.Size, nested lists of numbers),
    // by output name ("output_1"), as JSON text ("null", "[4096, 8]"). Solutions do not write them:
    // the engine adds them to both sides' outputs, so they reach the output files and the comparison.
    // Names must differ from output_specs' names.
    virtual std::map<std::string, std::string> output_values(const ProblemConfig& config, int rank) const;
    virtual WorkModel work(const ProblemConfig& config) const;
    // Ties (issue 16): per tensor output, the rows along dim 0 (tokens) whose reference values depend on
    // a tie in the reference's top-k choice on this rank, computed from the rank's host inputs (the
    // Tensors make_inputs filled, in input_specs order). The judge calls it, never the candidate's
    // process; it must be deterministic and host-only. A mismatch confined to these rows is reported as
    // tie-explained (still a mismatch). Default: no tie rows. Top-k problems use their toolkit's tie
    // rule (a row ties when its k-th and (k+1)-th scores, in the problem's dtype, are equal).
    virtual TieRowsByOutput tie_rows(const ProblemConfig& config, int rank,
                                     const std::vector<Tensor>& inputs) const;

    // Allocates and fills this rank's inputs.
    std::vector<Tensor> build_inputs(const ProblemConfig& config, int rank) const;
    // output_values, checked: every value parses as JSON and no name is also a tensor output's. Throws
    // pkbw::Error naming the problem, rank and leaf.
    std::map<std::string, std::string> checked_output_values(const ProblemConfig& config, int rank) const;
    // tie_rows, checked and normalised: every name is a tensor output of output_specs, every row is in
    // [0, dim 0) (0 for a 0-dim output), rows are sorted and distinct, the rule is not empty; outputs
    // with no rows are dropped. Throws pkbw::Error naming the problem, rank, output and row.
    TieRowsByOutput checked_tie_rows(const ProblemConfig& config, int rank,
                                     const std::vector<Tensor>& inputs) const;
};

// List-valued parameters travel in the scalar map: list `name` = {v0, v1} is "name[0]" = v0,
// "name[1]" = v1 and "name[]" = 2 (the length, so that an empty list exists too). The crosscheck turns
// them back into Python lists by the same rule.
std::string list_param_key(std::string_view name, int index);
std::string list_param_length_key(std::string_view name);
void add_list_param(std::map<std::string, double>& params, std::string_view name,
                    const std::vector<double>& values);
// The list `name` of params, or nullopt when it has none. Throws pkbw::Error when an element is missing.
std::optional<std::vector<double>> find_list_param(const std::map<std::string, double>& params,
                                                   std::string_view name);

} // namespace pkbw
