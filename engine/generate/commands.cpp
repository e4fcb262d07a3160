#include "commands.h"

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
    }

    std::optional<int> run_parsed() override {
        if (prompt_->parsed())
            return run_prompt_command(prompt_options_);
        return std::nullopt;
    }

private:
    CLI::App* prompt_ = nullptr;
    PromptOptions prompt_options_;
};

} // namespace

std::unique_ptr<Commands> register_commands(CLI::App& app) {
    return std::make_unique<GenerationCommands>(app);
}

} // namespace pkbw::generate
