// A rendezvous's two secrets-and-addresses, written once for the launcher (the judges' rendezvous)
// and the judges (the candidates' own): a free loopback port and a random token.
#pragma once

#include <string>

namespace pkbw::engine {

// A free loopback port (bound and released; the rendezvous server binds it next). Throws pkbw::Error.
int free_loopback_port();
// 32 hex digits from /dev/urandom. Throws pkbw::Error.
std::string random_hex_token();

} // namespace pkbw::engine
