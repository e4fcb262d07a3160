// make_gui_agent_store DIR PKBW: writes the scripted agent trajectory and a generated, judged
// candidate into DIR/runs.db (agent_fixture.h) for tools/screenshots.sh; prints the run ids.
#include "agent_fixture.h"
#include "pkbw/core/generation_store.h"
#include "pkbw/core/store.h"

#include <exception>
#include <iostream>

int main(int argc, char** argv) {
    if (argc != 3) {
        std::cerr << "usage: make_gui_agent_store DIR PKBW\n";
        return 2;
    }
    try {
        const auto fixture = pkbw::test::make_agent_store(argv[1], argv[2], PKBW_SOURCE_ROOT);
        const pkbw::Store store = pkbw::Store::open_read_only(fixture.store);
        for (const auto& a : pkbw::agent_attempts(store, fixture.agent_generation))
            std::cout << "attempt " << a.attempt << " run " << a.run_id.value_or(0) << " " << a.verdict
                      << "\n";
        std::cout << "generated run " << fixture.generated_run << "\n";
        return 0;
    } catch (const std::exception& e) {
        std::cerr << "make_gui_agent_store: " << e.what() << "\n";
        return 1;
    }
}
