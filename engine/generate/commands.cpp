#include "commands.h"

#include "generate_command.h"
#include "prompt_command.h"

namespace pkbw::generate {

namespace {

class GenerationCommands : public Commands {
public:
    explicit GenerationCommands(CLI::App& app) {
        prompt_ =
            app.add_subcommand("prompt", "print the prompt for a problem (PKB's kernelgen or pkbw's ABI)");
        add_prompt_options(*prompt_, prompt_options_);
        prompt_->add_flag("--system", prompt_options_.system, "print the system message too");
        generate_ =
            app.add_subcommand("generate", "ask a model for candidates and write a generation folder");
        add_generate_options(*generate_, generate_options_);
    }

    void set_command_line(std::vector<std::string> line) override {
        generate_options_.command_line = std::move(line);
    }

    std::optional<int> run_parsed() override {
        if (prompt_->parsed())
            return run_prompt_command(prompt_options_);
        if (generate_->parsed())
            return run_generate_command(generate_options_);
        return std::nullopt;
    }

private:
    CLI::App* prompt_ = nullptr;
    PromptOptions prompt_options_;
    CLI::App* generate_ = nullptr;
    GenerateOptions generate_options_;
};

} // namespace

std::unique_ptr<Commands> register_commands(CLI::App& app) {
    return std::make_unique<GenerationCommands>(app);
}

} // namespace pkbw::generate
