#include "native_prompt.h"

#include "pkbw/core/dtype.h"
#include "pkbw/core/error.h"
#include "pyformat.h"

#include <sstream>

namespace pkbw::generate {

namespace fs = std::filesystem;

std::string native_extension(const std::string& target) {
    return target == "host" ? "cpp" : "cu";
}

std::optional<DType> precision_dtype(const std::string& precision) {
    if (precision == "bf16")
        return DType::BF16;
    if (precision == "fp16" || precision == "f16")
        return DType::F16;
    if (precision == "fp32" || precision == "f32")
        return DType::F32;
    if (precision == "fp64" || precision == "f64")
        return DType::F64;
    return std::nullopt;
}

namespace {

std::string describe(const TensorSpec& spec) {
    return "`" + spec.name + "` " + std::string(dtype_name(spec.dtype)) + " " + shape_to_string(spec.shape);
}

// A hand-written baseline for the problem, else problem 1's as a syntax example.
std::optional<std::pair<fs::path, bool>> find_sample(const fs::path& root, const std::string& stem,
                                                     const std::string& target) {
    const std::string ext = native_extension(target);
    fs::path samples = root / "samples";
    if (!fs::is_directory(samples))
        return std::nullopt;
    for (bool own : {true, false}) {
        std::string wanted = (own ? stem : std::string("1_allreduce")) + "_" + target + "." + ext;
        for (const auto& entry : fs::directory_iterator(samples)) {
            std::string folder = entry.path().filename().string();
            if (!folder.starts_with("solutions_" + target + "_") || !folder.ends_with("_baseline"))
                continue;
            if (fs::is_regular_file(entry.path() / wanted))
                return std::pair{entry.path() / wanted, own};
        }
    }
    return std::nullopt;
}

} // namespace

std::string native_system_prompt(const std::string& target) {
    return "You are an expert " + std::string(target == "host" ? "C++" : "CUDA") +
           " and distributed systems engineer writing a solution for pkbw, the ParallelKernel Workbench. A "
           "solution is one source file against pkbw's solution ABI; every rank runs it at the same time. "
           "Keep the results within the stated tolerance and make it fast. Answer with the complete file in "
           "one fenced code block.";
}

std::string native_user_prompt(const NativePromptRequest& request, const NativeSources& sources) {
    if (request.problem == nullptr)
        throw Error("native prompt: no problem");
    auto dtype = precision_dtype(request.precision);
    if (!dtype)
        throw Error("native prompt: unknown precision '" + request.precision + "' (bf16, fp16, fp32)");
    const ProblemInfo& info = request.problem->info();
    ProblemConfig config;
    config.world_size = request.world_size;
    config.m = request.m;
    config.n = request.n;
    config.dtype = *dtype;
    if (auto why = request.problem->check_config(config))
        throw Error("native prompt: problem " + info.stem + ": " + *why);
    const std::string fence = request.target == "host" ? "cpp" : "cuda";

    std::ostringstream out;
    out << "Write a pkbw solution for ParallelKernelBench problem " << info.id << " (" << info.stem
        << "): " << info.title << ".\n\n"
        << "## The problem\n\n"
        << python_strip(info.description) << "\n\n"
        << "## What each rank receives and returns (W = " << request.world_size << ", M = " << request.m
        << ", N = " << request.n << ", dtype " << dtype_name(*dtype) << ")\n\n";
    for (int rank = 0; rank < request.world_size; ++rank) {
        out << "- rank " << rank << ": inputs";
        auto inputs = request.problem->input_specs(config, rank);
        for (std::size_t i = 0; i < inputs.size(); ++i)
            out << (i ? ", " : " ") << i << ": " << describe(inputs[i]);
        out << "; outputs";
        auto outputs = request.problem->output_specs(config, rank);
        for (std::size_t i = 0; i < outputs.size(); ++i)
            out << (i ? ", " : " ") << i << ": " << describe(outputs[i]);
        out << "\n";
    }
    auto params = request.problem->params(config);
    if (!params.empty()) {
        out << "\nParameters (read with `ctx.param(name, fallback)`):";
        for (const auto& [name, value] : params)
            out << " `" << name << "` = " << value << ";";
        out << "\n";
    }
    out << "\nThe outputs are compared with the reference's per rank with atol = " << info.atol
        << " and rtol = " << info.rtol
        << " (|ref - cand| <= atol + rtol * |cand|, element by element, as torch.allclose(ref, cand)).";
    if (info.mutates_inputs)
        out << " The reference mutates some inputs in place; so may the solution.";
    else
        out << " Inputs must not be modified.";
    out << "\n\n## The solution ABI\n\n";
    fs::path abi_doc = sources.data_root / "docs" / "solution-abi.md";
    if (fs::is_regular_file(abi_doc))
        out << python_strip(read_text_universal(abi_doc.string())) << "\n\n";
    out << "The header the solution includes, `pkbw/solution.h`:\n\n```cpp\n"
        << python_strip(read_text_universal(sources.abi_header.string())) << "\n```\n\n";

    if (auto sample = find_sample(sources.data_root, info.stem, request.target)) {
        out << "## Example\n\n"
            << (sample->second ? "A straightforward baseline for this problem"
                               : "A baseline for problem 1 (all-reduce), to show the syntax only")
            << " (" << sample->first.filename().string() << "):\n\n```" << fence << "\n"
            << python_strip(read_text_universal(sample->first.string())) << "\n```\n\n";
    }
    out << "## Target\n\n"
        << "- Backend: "
        << (request.target == "host" ? "host (C++ with host pointers, -DPKBW_BACKEND_HOST)"
                                     : "cuda (a .cu file built by nvcc, device pointers)")
        << ".\n- Precision: the inputs are " << dtype_name(*dtype) << "; optimise for it.\n";
    if (!request.hardware.empty())
        out << "- Hardware: " << request.hardware << ".\n";
    out << "\nAnswer with a short strategy (at most a few lines) and the complete source file in one ```"
        << fence << " fenced block. The file will be saved as: " << request.solution_relative_path << "\n";
    return out.str();
}

} // namespace pkbw::generate
