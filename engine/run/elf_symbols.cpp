#include "elf_symbols.h"

#include "pkbw/core/error.h"

#include <algorithm>
#include <cstring>
#include <elf.h>
#include <fstream>
#include <iterator>
#include <map>
#include <set>

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

// An ELF file's bytes and section headers, checked (64-bit little-endian, headers inside the file).
struct ElfImage {
    std::string file, bytes;
    Elf64_Ehdr header{};
    std::vector<Elf64_Shdr> sections;

    // The bytes of a string table section, checked to lie inside the file.
    std::string_view string_table(const Elf64_Shdr& strings, const char* what) const {
        if (strings.sh_offset > bytes.size() || bytes.size() - strings.sh_offset < strings.sh_size)
            throw FormatError(file + ": " + std::string(what) + " lies outside the file");
        return {bytes.data() + strings.sh_offset, strings.sh_size};
    }
    // The name at `offset` of `table`, up to its NUL.
    std::string name_at(std::string_view table, std::uint64_t offset, const std::string& what) const {
        if (offset >= table.size())
            throw FormatError(file + ": " + what + " name offset " + std::to_string(offset) +
                              " is outside its table");
        const std::string_view rest = table.substr(offset);
        return std::string(rest.substr(0, rest.find('\0')));
    }
    std::string section_name(std::size_t index) const {
        if (header.e_shstrndx >= sections.size() || index >= sections.size())
            return "";
        return name_at(string_table(sections[header.e_shstrndx], ".shstrtab"), sections[index].sh_name,
                       "section " + std::to_string(index));
    }
    Elf64_Sym symbol(const Elf64_Shdr& table, std::uint64_t index, const char* table_name) const {
        if (table.sh_entsize != sizeof(Elf64_Sym))
            throw FormatError(file + ": " + std::string(table_name) + " sh_entsize " +
                              std::to_string(table.sh_entsize));
        return read_at<Elf64_Sym>(bytes, table.sh_offset + index * sizeof(Elf64_Sym),
                                  std::string(table_name) + " entry " + std::to_string(index), file);
    }
    const Elf64_Shdr& linked(const Elf64_Shdr& section, const char* what) const {
        if (section.sh_link >= sections.size())
            throw FormatError(file + ": " + std::string(what) + " sh_link " +
                              std::to_string(section.sh_link) + " names no section");
        return sections[section.sh_link];
    }
};

ElfImage read_elf(const std::filesystem::path& path) {
    ElfImage elf;
    elf.file = path.string();
    std::ifstream in(path, std::ios::binary);
    if (!in)
        throw FormatError(elf.file + ": cannot open");
    std::error_code ec;
    const auto size = std::filesystem::file_size(path, ec);
    if (ec || size > kMaxLibraryBytes)
        throw FormatError(elf.file + ": not a readable library of at most 1 GiB");
    elf.bytes.assign((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    elf.header = read_at<Elf64_Ehdr>(elf.bytes, 0, "ELF header", elf.file);
    if (std::memcmp(elf.header.e_ident, ELFMAG, SELFMAG) != 0)
        throw FormatError(elf.file + ": not an ELF file (e_ident)");
    if (elf.header.e_ident[EI_CLASS] != ELFCLASS64 || elf.header.e_ident[EI_DATA] != ELFDATA2LSB)
        throw FormatError(elf.file + ": not a 64-bit little-endian ELF file (e_ident class/data)");
    if (elf.header.e_shentsize != sizeof(Elf64_Shdr))
        throw FormatError(elf.file + ": e_shentsize " + std::to_string(elf.header.e_shentsize) + " is not " +
                          std::to_string(sizeof(Elf64_Shdr)));
    for (std::uint64_t i = 0; i < elf.header.e_shnum; ++i)
        elf.sections.push_back(read_at<Elf64_Shdr>(elf.bytes, elf.header.e_shoff + i * sizeof(Elf64_Shdr),
                                                   "section header " + std::to_string(i), elf.file));
    return elf;
}

// The undefined symbols of the sections of type `type` (SHT_DYNSYM: a library's imports; SHT_SYMTAB:
// a relocatable object's references to code outside it).
std::vector<std::string> undefined_symbols(const std::filesystem::path& library, std::uint32_t type,
                                           const char* table_name, const char* strings_name) {
    const ElfImage elf = read_elf(library);
    std::vector<std::string> names;
    for (const auto& section : elf.sections) {
        if (section.sh_type != type)
            continue;
        const std::string_view table = elf.string_table(elf.linked(section, table_name), strings_name);
        const std::uint64_t count = section.sh_size / sizeof(Elf64_Sym);
        for (std::uint64_t i = 1; i < count; ++i) { // entry 0 is the null symbol
            const auto symbol = elf.symbol(section, i, table_name);
            if (symbol.st_shndx != SHN_UNDEF || symbol.st_name == 0)
                continue;
            names.push_back(
                elf.name_at(table, symbol.st_name, std::string(table_name) + " entry " + std::to_string(i)));
        }
    }
    return names;
}

} // namespace

std::map<std::string, std::set<std::string>> undefined_symbol_users(const std::filesystem::path& object) {
    const ElfImage elf = read_elf(object);
    std::map<std::string, std::set<std::string>> users;
    for (const auto& section : elf.sections) {
        if (section.sh_type != SHT_RELA)
            continue;
        const Elf64_Shdr& symbols = elf.linked(section, ".rela");
        const std::string_view names = elf.string_table(elf.linked(symbols, ".symtab"), ".strtab");
        const std::string target = elf.section_name(section.sh_info);
        const std::uint64_t count = section.sh_size / sizeof(Elf64_Rela);
        for (std::uint64_t i = 0; i < count; ++i) {
            const auto rela = read_at<Elf64_Rela>(elf.bytes, section.sh_offset + i * sizeof(Elf64_Rela),
                                                  "relocation " + std::to_string(i), elf.file);
            const std::uint64_t index = ELF64_R_SYM(rela.r_info);
            if (index == 0)
                continue;
            const auto symbol = elf.symbol(symbols, index, ".symtab");
            if (symbol.st_shndx == SHN_UNDEF && symbol.st_name != 0)
                users[elf.name_at(names, symbol.st_name, ".symtab entry " + std::to_string(index))].insert(
                    target);
        }
    }
    return users;
}

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

namespace {

// Whether every reference `object` makes to the dynamic loader (dlopen, dlmopen, dlsym, dlvsym) lies in
// NVTX v3's own functions (sections .text.nvtx..._v3: its lazy init, which loads the injection library
// NVTX_INJECTION64_PATH names). CUB includes NVTX, so an honest CUB sort carries them. A candidate
// could name a function of its own so: the flag then stays listed (info), and what such code could
// load is still seen at run time (NCCL kernels in its trace, the sandbox's file rules). False for a
// file that is not a relocatable object or has no such reference.
bool only_nvtx_loads_code(const std::filesystem::path& object) {
    std::map<std::string, std::set<std::string>> users;
    try {
        users = undefined_symbol_users(object);
    } catch (const Error&) {
        return false;
    }
    bool any = false;
    for (const char* loader : {"dlopen", "dlmopen", "dlsym", "dlvsym"}) {
        const auto found = users.find(loader);
        if (found == users.end())
            continue;
        for (const std::string& section : found->second) {
            if (!section.starts_with(".text.nvtx") || !section.ends_with("_v3"))
                return false;
            any = true;
        }
    }
    return any;
}

} // namespace

std::vector<Flag> candidate_flags(const std::vector<std::string>& symbols, const std::filesystem::path& code,
                                  const std::string& problem_collective) {
    std::vector<Flag> flags;
    for (const auto& name : nccl_collectives(symbols)) {
        if (!problem_collective.empty() && name == problem_collective)
            flags.push_back(
                {"suspect", "calls NCCL collective " + name,
                 "the problem's own collective: the library may do the work the candidate is judged on"});
        else
            flags.push_back({"info", "calls NCCL collective " + name,
                             "a building block: not the whole problem's answer"});
    }
    for (const auto& line : imported_capability_flags(symbols)) {
        if (line.rfind("calls cuBLAS", 0) == 0)
            // pkbw has no reliable marker of a GEMM-type problem, so cuBLAS is never suspect on its own.
            flags.push_back(
                {"info", line, "cuBLAS in the candidate's own code; no GEMM marker makes it suspect"});
        else if (line.rfind("loads code at run time", 0) == 0 && only_nvtx_loads_code(code))
            flags.push_back(
                {"info", line,
                 "only in NVTX's injection loader, header code that CUB and CCCL compile into the "
                 "candidate: it loads the profiler NVTX_INJECTION64_PATH names and nothing the "
                 "candidate chooses"});
        else
            flags.push_back(
                {"suspect", line, "called from the candidate's own code, not a library it links"});
    }
    for (const auto& line : proc_path_flags(code))
        flags.push_back({"suspect", line, "the path is in the candidate's own code"});
    return flags;
}

} // namespace pkbw::cli
