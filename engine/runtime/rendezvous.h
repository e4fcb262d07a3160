// The rank group's meeting point: a small TCP service on loopback (by default) hosted by rank 0,
// which every rank joins with the run's random token. It carries the NCCL unique id, memory
// handles, and the host backend's collectives (all-gather and barrier), in rank order.
#pragma once

#include "pkbw/core/error.h"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace pkbw::engine {

struct RendezvousConfig {
    int rank = 0;
    int world_size = 1;
    std::string address = "127.0.0.1";
    int port = 0;
    std::string token;             // every connection must present it
    double connect_timeout_s = 60; // how long clients retry before the server is up
    // Rank 0 only: a socket already bound to `port` and listening (loopback.h's LoopbackListener,
    // inherited as PKBW_RDZV_LISTEN_FD), which the server adopts instead of binding the port
    // itself. -1: the server binds `port` (a rank started by torchrun or by hand).
    int listen_fd = -1;
};

// The rank group could not meet: the address does not resolve, rank 0's port cannot be bound or
// reached, a peer refused us. An environment failure (the rank exits 3, status.h), not pkbw's bug.
class RendezvousError : public Error {
public:
    using Error::Error;
};

class Rendezvous {
public:
    // Rank 0 starts the server, then every rank (rank 0 included) connects as a client.
    // Throws RendezvousError naming the address on failure. `address` is an IPv4 literal or a host
    // name (resolved with getaddrinfo, IPv4).
    static std::unique_ptr<Rendezvous> join(const RendezvousConfig& config);
    virtual ~Rendezvous() = default;

    int rank() const { return rank_; }
    int world_size() const { return world_size_; }

    // Every rank contributes `mine` (sizes may differ); returns all contributions in rank order.
    // Collective: every rank must call it, in the same order.
    virtual std::vector<std::vector<std::byte>> all_gather(std::span<const std::byte> mine) = 0;
    // Same-size contributions, concatenated in rank order.
    std::vector<std::byte> all_gather_concat(std::span<const std::byte> mine);
    void barrier();

protected:
    Rendezvous(int rank, int world_size)
        : rank_(rank)
        , world_size_(world_size) {}

private:
    int rank_;
    int world_size_;
};

// Reads the rendezvous settings from the environment torchrun (and pkbw's launcher) sets:
// RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT or PKBW_RDZV_PORT, PKBW_RDZV_TOKEN, and for rank 0
// PKBW_RDZV_LISTEN_FD (the listening socket it inherited; set close-on-exec here).
RendezvousConfig rendezvous_config_from_env();

} // namespace pkbw::engine
