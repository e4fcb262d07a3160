// pkbw-rank: one rank of a pkbw run. Started by `pkbw` (or torchrun, mpirun, srun) with the rank in
// the environment and the run's configuration file (docs/engine.md).
#include "../runtime/rank_runner.h"
#include "pkbw/core/error.h"
#include "pkbw/core/protocol.h"
#include "pkbw/core/run_layout.h"
#include "pkbw/core/status.h"
#include "pkbw/tracer_control.h"

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>

int main(int argc, char** argv) {
    using namespace pkbw::engine;
    using pkbw::load_rank_config;
    using pkbw::RankConfig;
    std::string config_path;
    for (int i = 1; i < argc; ++i) {
        if (std::strcmp(argv[i], "--config") == 0 && i + 1 < argc) {
            config_path = argv[++i];
        } else if (std::strcmp(argv[i], "--help") == 0) {
            std::cout
                << "usage: pkbw-rank --config RUN_DIR/config.json   (RANK, WORLD_SIZE, MASTER_PORT set)\n";
            return 0;
        } else {
            std::cerr << "pkbw-rank: unknown argument '" << argv[i] << "' (see --help)\n";
            return 2;
        }
    }
    // Before anything calls NVTX: point NVTX's injection at the CUPTI copy the tracer is bound to.
    pkbw::tracer::prepare_nvtx_injection();
    if (config_path.empty()) {
        std::cerr << "pkbw-rank: --config FILE is required\n";
        return 2;
    }
    const char* rank_text = std::getenv("RANK");
    const int rank = rank_text ? std::atoi(rank_text) : 0;
    RankConfig config;
    try {
        config = load_rank_config(config_path);
    } catch (const std::exception& error) {
        std::cerr << "pkbw-rank " << rank << ": " << error.what() << "\n";
        return kRankExitInternal;
    }
    const auto fallback = pkbw::run_layout::rank_events(config.output_dir, rank);
    try {
        std::filesystem::create_directories(config.output_dir);
        EventSink events = EventSink::from_environment(fallback.string());
        try {
            return run_rank(config, events);
        } catch (const std::exception& error) {
            events.send({{"event", pkbw::protocol::kError},
                         {"rank", rank},
                         {"kind", pkbw::status::kKindInternal},
                         {"message", error.what()}});
            std::cerr << "pkbw-rank " << rank << ": " << error.what() << "\n";
            return kRankExitInternal;
        }
    } catch (const std::exception& error) {
        std::cerr << "pkbw-rank " << rank << ": " << error.what() << "\n";
        return kRankExitInternal;
    }
}
