// What a compiled candidate imports, read from its ELF dynamic symbol table (what `nm -D --undefined`
// lists). A candidate that imports an NCCL collective most likely lets the library do the problem's
// work instead of computing it: the run passes, with a warning beside the verdict.
#pragma once

#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace pkbw::cli {

// The names of the undefined symbols in `library`'s .dynsym, in table order. Throws pkbw::FormatError
// naming the file and the bad field when it is not a 64-bit little-endian ELF or a table lies outside
// the file.
std::vector<std::string> undefined_dynamic_symbols(const std::filesystem::path& library);
// The names of the undefined symbols in a relocatable object's .symtab (what `nm --undefined-only
// file.o` lists): what the candidate's own code calls, without what the libraries it links bring
// (the static CUDA runtime's dlopen, pthread_create, /proc/self/maps). Same errors as above.
std::vector<std::string> undefined_object_symbols(const std::filesystem::path& object);

// For each undefined symbol a relocatable object refers to, the sections whose relocations refer to it
// (".text" for the candidate's own non-inline code, ".text.<function>" for inline and header code
// such as NVTX's ".text.nvtxMarkEx_impl_init_v3"). Same errors as above.
std::map<std::string, std::set<std::string>> undefined_symbol_users(const std::filesystem::path& object);

// The NCCL collectives (ncclAllReduce, ncclAllGather, ncclReduceScatter, ncclBroadcast, ncclBcast,
// ncclReduce, ncclAlltoAll, ncclGather, ncclScatter, ncclSend, ncclRecv) among `symbols`, in order.
std::vector<std::string> nccl_collectives(const std::vector<std::string>& symbols);

// Flags beside the verdict from what a candidate imports (docs/engine.md, "Flags"): cuBLAS, starting
// processes, loading code or inspecting processes at run time, creating CUDA streams or host threads
// of its own. One line each, e.g. "starts processes (fork, execl)"; none of them fails a run.
std::vector<std::string> imported_capability_flags(const std::vector<std::string>& symbols);
// The syscall instructions (bytes 0f 05) in an object's executable sections: raw system calls its own
// code may make without importing a symbol. Throws pkbw::FormatError as above.
std::size_t syscall_instructions(const std::filesystem::path& object);
// Flags from the library's bytes: the /proc paths a candidate reads to search its own memory or a
// peer's ("/proc/self/maps", "/proc/self/mem", "/proc/%d/mem").
std::vector<std::string> proc_path_flags(const std::filesystem::path& library);

// One flag beside the verdict (docs/engine.md, "Flags"): "info" (worth knowing, no suspicion: an NCCL
// call that is not the problem's own collective, cuBLAS), "suspect" (a shortcut or an escape the
// candidate's own code takes: the problem's own collective, dlopen, threads, processes, /proc reads)
// or "invalidating" (the result cannot stand). `text` is the line the warnings list carries.
struct Flag {
    std::string severity;
    std::string text;
    std::string reason; // one line: why this severity
};

// The flags of a candidate from `symbols` (its own object's undefined symbols) and `code` (that
// object, for the /proc paths). `problem_collective`: the NCCL function name of the problem's own
// collective ("ncclAllReduce"), empty when the problem has none.
// Throws pkbw::FormatError naming `code` when it cannot be read (over 1 GiB, missing); a readable file
// that is not ELF is read for its bytes only.
std::vector<Flag> candidate_flags(const std::vector<std::string>& symbols, const std::filesystem::path& code,
                                  const std::string& problem_collective);
// The same from the object alone, read once (its undefined symbols, relocations, bytes and code).
// Throws pkbw::FormatError naming the file when it is not an object pkbw can read: the caller's flag
// "its own code's flags are unknown".
std::vector<Flag> object_flags(const std::filesystem::path& object, const std::string& problem_collective);

} // namespace pkbw::cli
