#include "elf_symbols.h"

#include "pkbw/core/error.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstring>
#include <elf.h>
#include <fstream>
#include <iterator>
#include <map>
#include <optional>
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

// Text a candidate chose (a symbol's name, a string in its code) made safe to print: control bytes as
// \xNN, so that a name cannot move the terminal's cursor over the lines around it.
std::string printable(std::string_view text) {
    std::string out;
    for (unsigned char c : text) {
        if (c < 0x20 || c == 0x7f) {
            char hex[5];
            std::snprintf(hex, sizeof hex, "\\x%02x", c);
            out += hex;
        } else {
            out += static_cast<char>(c);
        }
    }
    return out;
}

// The function a symbol names whatever its spelling: a version suffix cut ("dlsym@GLIBC_2.2.5", which
// `.symver` makes), NCCL's profiling aliases read as the calls they are ("pncclAllReduce").
std::string canonical_symbol(std::string_view name) {
    std::string base(name.substr(0, name.find('@')));
    if (base.rfind("pnccl", 0) == 0)
        base.erase(0, 1);
    return base;
}

} // namespace

namespace {

// An ELF file's bytes and section headers, checked (64-bit little-endian, headers inside the file).
struct ElfImage {
    std::string file, bytes;
    Elf64_Ehdr header{};
    std::vector<Elf64_Shdr> sections;
    std::uint64_t names_index = 0; // the section names' table (e_shstrndx, or section 0's sh_link)

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
        if (names_index >= sections.size() || index >= sections.size())
            return "";
        return name_at(string_table(sections[names_index], ".shstrtab"), sections[index].sh_name,
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

// The file's bytes, at most 1 GiB. Throws FormatError naming the file.
std::string read_object_bytes(const std::filesystem::path& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in)
        throw FormatError(path.string() + ": cannot open");
    std::error_code ec;
    const auto size = std::filesystem::file_size(path, ec);
    if (ec || size > kMaxLibraryBytes)
        throw FormatError(path.string() + ": not a readable library of at most 1 GiB");
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// The ELF image of `bytes` (read from `file`), its headers checked.
ElfImage parse_elf(std::string bytes, const std::string& file) {
    ElfImage elf;
    elf.file = file;
    elf.bytes = std::move(bytes);
    elf.header = read_at<Elf64_Ehdr>(elf.bytes, 0, "ELF header", elf.file);
    if (std::memcmp(elf.header.e_ident, ELFMAG, SELFMAG) != 0)
        throw FormatError(elf.file + ": not an ELF file (e_ident)");
    if (elf.header.e_ident[EI_CLASS] != ELFCLASS64 || elf.header.e_ident[EI_DATA] != ELFDATA2LSB)
        throw FormatError(elf.file + ": not a 64-bit little-endian ELF file (e_ident class/data)");
    if (elf.header.e_shentsize != sizeof(Elf64_Shdr))
        throw FormatError(elf.file + ": e_shentsize " + std::to_string(elf.header.e_shentsize) + " is not " +
                          std::to_string(sizeof(Elf64_Shdr)));
    // Extended numbering (more than 65279 sections, which a candidate's own assembler directives can
    // make): e_shnum is 0 and the count is section 0's sh_size; e_shstrndx SHN_XINDEX, the index its
    // sh_link. Read as the count says, never as "no sections".
    std::uint64_t count = elf.header.e_shnum;
    elf.names_index = elf.header.e_shstrndx;
    if (elf.header.e_shoff != 0 && (count == 0 || elf.names_index == SHN_XINDEX)) {
        const auto first = read_at<Elf64_Shdr>(elf.bytes, elf.header.e_shoff, "section header 0", elf.file);
        if (count == 0)
            count = first.sh_size;
        if (elf.names_index == SHN_XINDEX)
            elf.names_index = first.sh_link;
    }
    if (count > elf.bytes.size() / sizeof(Elf64_Shdr))
        throw FormatError(elf.file + ": " + std::to_string(count) +
                          " section headers cannot fit in the file");
    for (std::uint64_t i = 0; i < count; ++i)
        elf.sections.push_back(read_at<Elf64_Shdr>(elf.bytes, elf.header.e_shoff + i * sizeof(Elf64_Shdr),
                                                   "section header " + std::to_string(i), elf.file));
    return elf;
}

ElfImage read_elf(const std::filesystem::path& path) {
    return parse_elf(read_object_bytes(path), path.string());
}

// The undefined symbols of the sections of type `type` (SHT_DYNSYM: a library's imports; SHT_SYMTAB:
// a relocatable object's references to code outside it).
std::vector<std::string> undefined_symbols(const ElfImage& elf, std::uint32_t type, const char* table_name,
                                           const char* strings_name) {
    std::vector<std::string> names;
    bool found_table = false;
    for (const auto& section : elf.sections) {
        if (section.sh_type != type)
            continue;
        found_table = true;
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
    // An object without a symbol table imports nothing it can be asked about: say so, never "none".
    if (!found_table && type == SHT_SYMTAB)
        throw FormatError(elf.file + ": no " + std::string(table_name) +
                          " (a relocatable object always has one)");
    return names;
}

std::map<std::string, std::set<std::string>> symbol_users(const ElfImage& elf) {
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

std::vector<std::string> object_symbols(const ElfImage& elf) {
    return undefined_symbols(elf, SHT_SYMTAB, ".symtab", ".strtab");
}

} // namespace

std::map<std::string, std::set<std::string>> undefined_symbol_users(const std::filesystem::path& object) {
    return symbol_users(read_elf(object));
}

std::vector<std::string> undefined_dynamic_symbols(const std::filesystem::path& library) {
    return undefined_symbols(read_elf(library), SHT_DYNSYM, ".dynsym", ".dynstr");
}

std::vector<std::string> undefined_object_symbols(const std::filesystem::path& object) {
    return object_symbols(read_elf(object));
}

std::vector<std::string> nccl_collectives(const std::vector<std::string>& symbols) {
    static const std::vector<std::string> collectives = {
        "ncclAllReduce", "ncclAllGather", "ncclReduceScatter", "ncclBroadcast", "ncclBcast", "ncclReduce",
        "ncclAlltoAll",  "ncclGather",    "ncclScatter",       "ncclSend",      "ncclRecv"};
    std::vector<std::string> found;
    for (const auto& symbol : symbols) {
        const std::string name = canonical_symbol(symbol);
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
         {"fork",          "vfork",    "_Fork",       "clone",        "clone3",       "execve",
          "execv",         "execvp",   "execvpe",     "execl",        "execlp",       "execle",
          "fexecve",       "execveat", "posix_spawn", "posix_spawnp", "pidfd_spawn*", "system",
          "__libc_system", "popen",    "wordexp",     "daemon",       "forkpty"}},
        {"loads code at run time",
         {"dlopen", "dlmopen", "dlsym", "dlvsym", "dlinfo", "dl_iterate_phdr", "_dl_*", "__libc_dl*"}},
        {"makes raw system calls", {"syscall"}},
        {"inspects processes", {"ptrace", "process_vm_readv", "process_vm_writev", "pidfd_getfd"}},
        {"creates CUDA streams of its own",
         {"cudaStreamCreate", "cudaStreamCreateWithFlags", "cudaStreamCreateWithPriority",
          "cuStreamCreate*"}},
        {"starts host threads",
         {"pthread_create", "_ZNSt6thread15_M_start_thread*", "thrd_create", "timer_create", "aio_*",
          "lio_listio"}},
        {"runs host callbacks on CUDA's thread",
         {"cudaLaunchHostFunc", "cudaStreamAddCallback", "cuLaunchHostFunc"}},
        {"changes its environment", {"setenv", "putenv", "unsetenv", "clearenv"}},
        {"looks up driver functions at run time", {"cudaGetDriverEntryPoint*", "cuGetProcAddress*"}},
    };
    std::vector<std::string> flags;
    for (const auto& family : families) {
        std::vector<std::string> found;
        for (const auto& spelled : symbols) {
            const std::string symbol = printable(canonical_symbol(spelled));
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

namespace {

std::vector<std::string> proc_paths_in(std::string_view bytes) {
    // Any /proc path the code holds ("/proc/self/maps", "/proc/%d/mem", "/proc/%s/%s" built at run
    // time): an honest kernel has none, and a list of files would miss the one it was not written for.
    std::vector<std::string> paths;
    for (std::size_t at = bytes.find("/proc/"); at != std::string::npos && paths.size() < 3;
         at = bytes.find("/proc/", at + 1)) {
        std::string path;
        for (std::size_t i = at; i < bytes.size() && i < at + 40 && bytes[i] != '\0'; ++i)
            path += bytes[i];
        path = printable(path);
        if (std::find(paths.begin(), paths.end(), path) == paths.end())
            paths.push_back(path);
    }
    std::vector<std::string> flags;
    for (const auto& path : paths)
        flags.push_back("reads " + path);
    return flags;
}

std::size_t syscalls_in(const ElfImage& elf) {
    std::size_t count = 0;
    for (const auto& section : elf.sections) {
        if (section.sh_type != SHT_PROGBITS || !(section.sh_flags & SHF_EXECINSTR))
            continue;
        if (section.sh_offset > elf.bytes.size() || elf.bytes.size() - section.sh_offset < section.sh_size)
            throw FormatError(elf.file + ": an executable section lies outside the file");
        const std::string_view code(elf.bytes.data() + section.sh_offset, section.sh_size);
        for (std::size_t at = code.find("\x0f\x05"); at != std::string_view::npos;
             at = code.find("\x0f\x05", at + 1))
            ++count;
    }
    return count;
}

} // namespace

std::vector<std::string> proc_path_flags(const std::filesystem::path& library) {
    return proc_paths_in(read_object_bytes(library));
}

std::size_t syscall_instructions(const std::filesystem::path& object) {
    return syscalls_in(read_elf(object));
}

namespace {

// Whether every reference `object` makes to the dynamic loader (dlopen, dlmopen, dlsym, dlvsym) lies in
// NVTX v3's own functions (sections .text.nvtx..._v3: its lazy init, which loads the injection library
// NVTX_INJECTION64_PATH names). CUB includes NVTX, so an honest CUB sort carries them. A candidate
// could name a function of its own so: the flag then stays listed (info), and what such code could
// load is still seen at run time (NCCL kernels in its trace, the sandbox's file rules). False for a
// file that is not a relocatable object or has no such reference.
bool only_nvtx_loads_code(const ElfImage* object, const std::vector<std::string>& symbols) {
    if (!object)
        return false;
    // A candidate that sets its environment can point NVTX's loader at a library of its choice.
    for (const auto& symbol : symbols) {
        const std::string name = canonical_symbol(symbol);
        if (name == "setenv" || name == "putenv" || name == "unsetenv" || name == "clearenv")
            return false;
    }
    std::map<std::string, std::set<std::string>> users;
    try {
        users = symbol_users(*object);
    } catch (const Error&) {
        return false;
    }
    // NVTX's loader lives in its per-call lazy inits, ".text.nvtx<Call>_impl_init_v3" (COMDAT members
    // the header defines); the name is the only mark, so the flag stays listed and its reason says so.
    auto nvtx_loader = [](const std::string& section) {
        constexpr std::string_view head = ".text.nvtx", tail = "_impl_init_v3";
        if (section.size() <= head.size() + tail.size() || !section.starts_with(head) ||
            !section.ends_with(tail))
            return false;
        const std::string_view call(section.data() + head.size(), section.size() - head.size() - tail.size());
        return std::all_of(call.begin(), call.end(),
                           [](char c) { return std::isalnum(static_cast<unsigned char>(c)); });
    };
    bool any = false;
    for (const auto& [symbol, sections] : users) {
        const std::string name = canonical_symbol(symbol);
        const bool loader = name == "dlopen" || name == "dlmopen" || name == "dlsym" || name == "dlvsym" ||
                            name == "dlinfo" || name == "dl_iterate_phdr" || name.rfind("_dl_", 0) == 0 ||
                            name.rfind("__libc_dl", 0) == 0;
        if (!loader)
            continue;
        for (const std::string& section : sections) {
            if (!nvtx_loader(section))
                return false;
            any = true;
        }
    }
    return any;
}

// Whether the object's bytes name an environment variable that makes a library load code: NCCL's and
// CUDA's plugin and injection variables, the dynamic loader's own.
bool names_a_loader_variable(std::string_view bytes) {
    for (const char* name : {"PLUGIN", "INJECTION", "LD_PRELOAD", "LD_LIBRARY_PATH", "LD_AUDIT"})
        if (bytes.find(name) != std::string::npos)
            return true;
    return false;
}

// The pairs of NCCL collectives that make an all-reduce (reduce-scatter then all-gather; reduce then
// broadcast): for the all-reduce problem each alone is a building block, together they are the answer.
std::vector<std::string> all_reduce_pairs(const std::vector<std::string>& collectives) {
    auto has = [&](const char* name) {
        return std::find(collectives.begin(), collectives.end(), name) != collectives.end();
    };
    std::vector<std::string> pairs;
    if (has("ncclReduceScatter") && has("ncclAllGather"))
        pairs.push_back("ncclReduceScatter + ncclAllGather");
    if (has("ncclReduce") && (has("ncclBroadcast") || has("ncclBcast")))
        pairs.push_back(std::string("ncclReduce + ") +
                        (has("ncclBroadcast") ? "ncclBroadcast" : "ncclBcast"));
    return pairs;
}

// The flags of `symbols` and of the code's bytes; `object`, the bytes read as ELF (null when they are
// not one pkbw can read section by section: the symbols and bytes are then what it has).
std::vector<Flag> flags_from(const ElfImage* object, std::string_view bytes,
                             const std::vector<std::string>& symbols, const std::string& problem_collective) {
    std::vector<Flag> flags;
    const std::vector<std::string> collectives = nccl_collectives(symbols);
    for (const auto& name : collectives) {
        if (!problem_collective.empty() && name == problem_collective)
            flags.push_back(
                {"suspect", "calls NCCL collective " + name,
                 "the problem's own collective: the library may do the work the candidate is judged on"});
        else
            flags.push_back({"info", "calls NCCL collective " + name,
                             "a building block: not the whole problem's answer"});
    }
    if (problem_collective == "ncclAllReduce")
        for (const auto& pair : all_reduce_pairs(collectives))
            flags.push_back({"suspect", "calls NCCL collectives that make an all-reduce (" + pair + ")",
                             "together they are the problem's own collective"});
    for (const auto& line : imported_capability_flags(symbols)) {
        if (line.rfind("calls cuBLAS", 0) == 0)
            // pkbw has no reliable marker of a GEMM-type problem, so cuBLAS is never suspect on its own.
            flags.push_back(
                {"info", line, "cuBLAS in the candidate's own code; no GEMM marker makes it suspect"});
        else if (line.rfind("runs host callbacks", 0) == 0)
            flags.push_back({"info", line, "CUDA runs them on its own thread, in stream order"});
        else if (line.rfind("looks up driver functions", 0) == 0)
            flags.push_back({"info", line, "kernels use it for the driver's newer calls (TMA descriptors)"});
        else if (line.rfind("changes its environment", 0) == 0 && !names_a_loader_variable(bytes))
            flags.push_back({"info", line, "it names no variable that makes a library load code"});
        else if (line.rfind("loads code at run time", 0) == 0 && only_nvtx_loads_code(object, symbols))
            flags.push_back(
                {"info", line,
                 "only from functions named as NVTX's injection loader (.text.nvtx..._impl_init_v3, header "
                 "code CUB and CCCL compile in), which loads the library NVTX_INJECTION64_PATH names; the "
                 "candidate sets no environment, but the name alone marks the code, so the flag stays "
                 "listed"});
        else
            flags.push_back(
                {"suspect", line, "called from the candidate's own code, not a library it links"});
    }
    for (const auto& line : proc_paths_in(bytes))
        flags.push_back({"suspect", line, "the path is in the candidate's own code"});
    std::size_t syscalls = 0;
    try {
        syscalls = object ? syscalls_in(*object) : 0;
    } catch (const Error&) {
        // An executable section outside the file: the symbols above are what pkbw has.
    }
    if (syscalls > 0)
        flags.push_back({"info",
                         "may make raw system calls (" + std::to_string(syscalls) +
                             " syscall instruction(s) in its own code)",
                         "the bytes 0f 05 in executable code: a syscall, or part of another instruction"});
    return flags;
}

} // namespace

std::vector<Flag> candidate_flags(const std::vector<std::string>& symbols, const std::filesystem::path& code,
                                  const std::string& problem_collective) {
    // Fails closed as object_flags does: a file that cannot be read (over 1 GiB, gone) throws, never
    // "fewer flags".
    std::string bytes = read_object_bytes(code);
    std::optional<ElfImage> object;
    try {
        object = parse_elf(bytes, code.string());
    } catch (const Error&) {
    }
    return flags_from(object ? &*object : nullptr, object ? object->bytes : bytes, symbols,
                      problem_collective);
}

std::vector<Flag> object_flags(const std::filesystem::path& object, const std::string& problem_collective) {
    const ElfImage elf = read_elf(object); // once: symbols, relocations, paths and code from one read
    return flags_from(&elf, elf.bytes, object_symbols(elf), problem_collective);
}

} // namespace pkbw::cli
