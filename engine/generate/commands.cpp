#include "commands.h"

#include "agent_command.h"
#include "generate_command.h"
#include "pkbw/core/generation_store.h"
#include "prompt_command.h"
#include "store_recorder.h"

#include <iostream>

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
        agent_ = app.add_subcommand("agent", "generate, judge with pkbw, feed the verdict back, iterate");
        add_agent_options(*agent_, agent_options_);
        generation_ = app.add_subcommand("generation", "print a generation: exchanges, trajectory, fast1@k");
        generation_->add_option("ID", generation_id_, "generation id")->required();
        generation_->add_option("--store", generation_store_, "SQLite store");
    }

    void after_show(const std::string& store_path, std::int64_t run_id) override {
        try {
            Store store = Store::open_read_only(store_path);
            if (auto attempt = agent_attempt_for_run(store, run_id)) {
                std::cout << "\nagent: attempt " << attempt->attempt << " of generation "
                          << attempt->generation_id
                          << (attempt->parent_attempt
                                  ? ", parent attempt " + std::to_string(*attempt->parent_attempt)
                                  : "")
                          << "\n";
                show_generation(store_path, attempt->generation_id, std::cout, std::cerr);
            }
        } catch (const std::exception&) {
            // An older store or none: nothing to add to `pkbw show`.
        }
    }

    void set_command_line(std::vector<std::string> line) override {
        generate_options_.command_line = std::move(line);
    }

    std::optional<int> run_parsed() override {
        if (prompt_->parsed())
            return run_prompt_command(prompt_options_);
        if (generate_->parsed())
            return run_generate_command(generate_options_);
        if (agent_->parsed())
            return run_agent_command(agent_options_);
        if (generation_->parsed())
            return show_generation(generation_store_, generation_id_, std::cout, std::cerr);
        return std::nullopt;
    }

private:
    CLI::App* prompt_ = nullptr;
    PromptOptions prompt_options_;
    CLI::App* generate_ = nullptr;
    GenerateOptions generate_options_;
    CLI::App* agent_ = nullptr;
    AgentOptions agent_options_;
    CLI::App* generation_ = nullptr;
    std::int64_t generation_id_ = 0;
    std::optional<std::string> generation_store_;
};

} // namespace

std::unique_ptr<Commands> register_commands(CLI::App& app) {
    return std::make_unique<GenerationCommands>(app);
}

} // namespace pkbw::generate
