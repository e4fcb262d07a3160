#include "elf_symbols.h"

#include "pkbw/core/error.h"

#include <algorithm>
#include <cstring>
#include <elf.h>
#include <fstream>
#include <iterator>

namespace pkbw::cli {
namespace {

constexpr std::uint64_t kMaxLibraryBytes = 1ull << 30;

template <typename T>
T read_at(const std::string& bytes, std::uint64_t offset, const std::string& what, const std::string& file) {
    if (offset > bytes.size() || bytes.size() - offset < sizeof(T))
        throw FormatError(file + ": " + what + " at offset " + std::to_string(offset) + " is past the end (" +
                          std::to_string(bytes.size()) + " bytes)");
    T value;
    std::memcpy(&value, bytes.data() + offset, sizeof(T));
    return value;
}

} // namespace

namespace {

// The undefined symbols of the sections of type `type` (SHT_DYNSYM: a library's imports; SHT_SYMTAB:
// a relocatable object's references to code outside it).
std::vector<std::string> undefined_symbols(const std::filesystem::path& library, std::uint32_t type,
                                           const char* table_name, const char* strings_name) {
    const std::string file = library.string();
    std::ifstream in(library, std::ios::binary);
    if (!in)
        throw FormatError(file + ": cannot open");
    std::error_code ec;
    const auto size = std::filesystem::file_size(library, ec);
    if (ec || size > kMaxLibraryBytes)
        throw FormatError(file + ": not a readable library of at most 1 GiB");
    const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());

    const auto header = read_at<Elf64_Ehdr>(bytes, 0, "ELF header", file);
    if (std::memcmp(header.e_ident, ELFMAG, SELFMAG) != 0)
        throw FormatError(file + ": not an ELF file (e_ident)");
    if (header.e_ident[EI_CLASS] != ELFCLASS64 || header.e_ident[EI_DATA] != ELFDATA2LSB)
        throw FormatError(file + ": not a 64-bit little-endian ELF file (e_ident class/data)");
    if (header.e_shentsize != sizeof(Elf64_Shdr))
        throw FormatError(file + ": e_shentsize " + std::to_string(header.e_shentsize) + " is not " +
                          std::to_string(sizeof(Elf64_Shdr)));
    std::vector<Elf64_Shdr> sections;
    for (std::uint64_t i = 0; i < header.e_shnum; ++i)
        sections.push_back(read_at<Elf64_Shdr>(bytes, header.e_shoff + i * sizeof(Elf64_Shdr),
                                               "section header " + std::to_string(i), file));

    std::vector<std::string> names;
    for (const auto& section : sections) {
        if (section.sh_type != type)
            continue;
        if (section.sh_link >= sections.size())
            throw FormatError(file + ": " + std::string(table_name) + " sh_link " + std::to_string(section.sh_link) +
                              " names no section");
        const Elf64_Shdr& strings = sections[section.sh_link];
        if (strings.sh_offset > bytes.size() || bytes.size() - strings.sh_offset < strings.sh_size)
            throw FormatError(file + ": " + std::string(strings_name) + " lies outside the file");
        const std::string_view table(bytes.data() + strings.sh_offset, strings.sh_size);
        if (section.sh_entsize != sizeof(Elf64_Sym))
            throw FormatError(file + ": " + std::string(table_name) + " sh_entsize " + std::to_string(section.sh_entsize));
        const std::uint64_t count = section.sh_size / sizeof(Elf64_Sym);
        for (std::uint64_t i = 1; i < count; ++i) { // entry 0 is the null symbol
            const auto symbol = read_at<Elf64_Sym>(bytes, section.sh_offset + i * sizeof(Elf64_Sym),
                                                   std::string(table_name) + " entry " + std::to_string(i), file);
            if (symbol.st_shndx != SHN_UNDEF || symbol.st_name == 0)
                continue;
            if (symbol.st_name >= table.size())
                throw FormatError(file + ": " + std::string(table_name) + " entry " + std::to_string(i) + " st_name " +
                                  std::to_string(symbol.st_name) + " is outside " + strings_name);
            const std::string_view rest = table.substr(symbol.st_name);
            names.emplace_back(rest.substr(0, rest.find('\0')));
        }
    }
    return names;
}

} // namespace

std::vector<std::string> undefined_dynamic_symbols(const std::filesystem::path& library) {
    return undefined_symbols(library, SHT_DYNSYM, ".dynsym", ".dynstr");
}

std::vector<std::string> undefined_object_symbols(const std::filesystem::path& object) {
    return undefined_symbols(object, SHT_SYMTAB, ".symtab", ".strtab");
}

std::vector<std::string> nccl_collectives(const std::vector<std::string>& symbols) {
    static const std::vector<std::string> collectives = {
        "ncclAllReduce", "ncclAllGather", "ncclReduceScatter", "ncclBroadcast", "ncclBcast", "ncclReduce",
        "ncclAlltoAll",  "ncclGather",    "ncclScatter",       "ncclSend",      "ncclRecv"};
    std::vector<std::string> found;
    for (const auto& name : symbols) {
        if (std::find(collectives.begin(), collectives.end(), name) != collectives.end() &&
            std::find(found.begin(), found.end(), name) == found.end())
            found.push_back(name);
    }
    return found;
}

std::vector<std::string> imported_capability_flags(const std::vector<std::string>& symbols) {
    struct Family {
        const char* what;
        std::vector<std::string> names; // exact names; a trailing '*' matches a prefix
    };
    static const std::vector<Family> families = {
        {"calls cuBLAS", {"cublas*"}},
        {"starts processes",
         {"fork", "vfork", "clone", "clone3", "execve", "execv", "execvp", "execvpe", "execl", "execlp",
          "execle", "posix_spawn", "posix_spawnp", "system", "popen"}},
        {"loads code at run time", {"dlopen", "dlmopen", "dlsym", "dlvsym"}},
        {"inspects processes", {"ptrace", "process_vm_readv", "process_vm_writev", "pidfd_getfd"}},
        {"creates CUDA streams of its own",
         {"cudaStreamCreate", "cudaStreamCreateWithFlags", "cudaStreamCreateWithPriority",
          "cuStreamCreate*"}},
        {"starts host threads", {"pthread_create", "_ZNSt6thread15_M_start_thread*"}},
    };
    std::vector<std::string> flags;
    for (const auto& family : families) {
        std::vector<std::string> found;
        for (const auto& symbol : symbols) {
            for (const auto& name : family.names) {
                const bool prefix = name.back() == '*';
                const bool match =
                    prefix ? symbol.rfind(name.substr(0, name.size() - 1), 0) == 0 : symbol == name;
                if (match && std::find(found.begin(), found.end(), symbol) == found.end()) {
                    found.push_back(symbol);
                }
            }
        }
        if (found.empty()) {
            continue;
        }
        std::string line = std::string(family.what) + " (";
        for (std::size_t i = 0; i < found.size() && i < 4; ++i) {
            line += (i ? ", " : "") +
                    (found[i].rfind("_ZNSt6thread", 0) == 0 ? std::string("std::thread") : found[i]);
        }
        line += found.size() > 4 ? ", ...)" : ")";
        flags.push_back(line);
    }
    return flags;
}

std::vector<std::string> proc_path_flags(const std::filesystem::path& library) {
    std::ifstream in(library, std::ios::binary);
    const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::vector<std::string> flags;
    for (const char* path : {"/proc/self/maps", "/proc/self/mem", "/proc/%d/mem", "/proc/%d/maps"}) {
        if (bytes.find(path) != std::string::npos) {
            flags.push_back(std::string("reads ") + path);
        }
    }
    return flags;
}

std::vector<Flag> candidate_flags(const std::vector<std::string>& symbols, const std::filesystem::path& code,
                                  const std::string& problem_collective) {
    std::vector<Flag> flags;
    for (const auto& name : nccl_collectives(symbols)) {
        if (!problem_collective.empty() && name == problem_collective)
            flags.push_back({"suspect", "calls NCCL collective " + name,
                             "the problem's own collective: the library may do the work the candidate is judged on"});
        else
            flags.push_back({"info", "calls NCCL collective " + name,
                             "a building block: not the whole problem's answer"});
    }
    for (const auto& line : imported_capability_flags(symbols)) {
        if (line.rfind("calls cuBLAS", 0) == 0)
            // pkbw has no reliable marker of a GEMM-type problem, so cuBLAS is never suspect on its own.
            flags.push_back({"info", line, "cuBLAS in the candidate's own code; no GEMM marker makes it suspect"});
        else
            flags.push_back({"suspect", line, "called from the candidate's own code, not a library it links"});
    }
    for (const auto& line : proc_path_flags(code))
        flags.push_back({"suspect", line, "the path is in the candidate's own code"});
    return flags;
}

} // namespace pkbw::cli
