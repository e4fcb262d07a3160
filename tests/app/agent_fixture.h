// Real generation data for the GUI tests and tools/screenshots.sh, offline: a scripted model on a
// loopback server (tests/generate/fake_provider.h; its replies are written here, for the tests)
// drives `pkbw agent` on problem 1 on the host backend (a wrong candidate, one that does not compile,
// then the sample: three judged attempts), and `pkbw generate` writes problem 2's candidate, which
// `pkbw eval` then judges. Everything lands in DIR/runs.db.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

namespace pkbw::test {

struct AgentFixture {
    std::filesystem::path store;
    std::int64_t agent_generation = 0, generate_generation = 0;
    std::int64_t generated_run = 0; // the eval of the generated problem-2 candidate
    std::string log;                // what the commands printed (for a failing test's message)
};

// Throws std::runtime_error with the commands' output when a step fails.
AgentFixture make_agent_store(const std::filesystem::path& dir, const std::string& pkbw_program,
                              const std::filesystem::path& source_root);

} // namespace pkbw::test
