#include "pkbw/core/untrusted_file.h"

#include "pkbw/core/unique_fd.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <memory>
#include <optional>
#include <sys/stat.h>
#include <unistd.h>
#include <utility>

namespace pkbw {
namespace {

namespace fs = std::filesystem;

std::string kind_of(mode_t mode) {
    if (S_ISLNK(mode))
        return "a symbolic link: not followed";
    if (S_ISDIR(mode))
        return "a directory, not a regular file";
    if (S_ISFIFO(mode))
        return "a FIFO, not a regular file";
    if (S_ISSOCK(mode))
        return "a socket, not a regular file";
    if (S_ISCHR(mode) || S_ISBLK(mode))
        return "a device, not a regular file";
    return "not a regular file";
}

// Why `name` in `dir` could not be opened with `code`: what it is when it is no directory or file.
std::string why_not_opened(int dir, const std::string& name, int code) {
    struct stat st {};
    if ((code == ELOOP || code == ENOTDIR) && ::fstatat(dir, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0) {
        return kind_of(st.st_mode);
    }
    return code == ENOENT ? "no such file or directory" : std::strerror(code);
}

// The components of `relative`, or nullopt for a path that could leave the base.
std::optional<std::vector<std::string>> components(const fs::path& relative) {
    if (relative.is_absolute() || relative.has_root_name()) {
        return std::nullopt;
    }
    std::vector<std::string> parts;
    for (const auto& part : relative) {
        const std::string text = part.string();
        if (text == "..") {
            return std::nullopt;
        }
        if (!text.empty() && text != ".") {
            parts.push_back(text);
        }
    }
    return parts;
}

// The directory base/parts[0]/.../parts[n-1], no component after base followed if it is a link.
struct OpenedDirectory {
    UniqueFd fd;
    std::string error; // "<path>: <reason>"
    bool missing = false;
};

OpenedDirectory open_below(const fs::path& base, const std::vector<std::string>& parts, std::size_t n) {
    OpenedDirectory out;
    out.fd = UniqueFd(::open(base.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (out.fd.get() < 0) {
        const int code = errno;
        out.missing = code == ENOENT;
        out.error = base.string() + ": " + (code == ENOENT ? "no such directory" : std::strerror(code));
        return out;
    }
    fs::path shown = base;
    for (std::size_t i = 0; i < n; ++i) {
        shown /= parts[i];
        UniqueFd next(
            ::openat(out.fd.get(), parts[i].c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
        if (next.get() < 0) {
            const int code = errno;
            out.missing = code == ENOENT;
            out.error = shown.string() + ": " + why_not_opened(out.fd.get(), parts[i], code);
            out.fd = UniqueFd();
            return out;
        }
        out.fd = std::move(next);
    }
    return out;
}

// What makes a file unfit to read, from its stat; empty when it may be read.
std::string refusal(const struct stat& st, std::uint64_t max_bytes) {
    if (!S_ISREG(st.st_mode)) {
        return kind_of(st.st_mode);
    }
    if (st.st_nlink != 1) {
        return "has " + std::to_string(st.st_nlink) +
               " hard links, so it may be a file from elsewhere: not read";
    }
    if (st.st_size < 0 || static_cast<std::uint64_t>(st.st_size) > max_bytes) {
        return std::to_string(st.st_size) + " bytes, over the cap of " + std::to_string(max_bytes) +
               " bytes: not read";
    }
    return {};
}

// Reads fd to its end, holding at most max_bytes + 1 bytes; an error text when it holds more.
std::string read_capped(int fd, std::uint64_t max_bytes, std::uint64_t stated_size, std::string& bytes) {
    constexpr std::size_t kChunk = 1 << 20;
    const std::uint64_t limit = max_bytes + 1; // one byte more tells a file at the cap from one past it
    bytes.reserve(static_cast<std::size_t>(std::min(stated_size + 1, limit)));
    while (true) {
        const std::size_t used = bytes.size();
        const std::size_t want = static_cast<std::size_t>(std::min<std::uint64_t>(kChunk, limit - used));
        if (bytes.capacity() < used + want) {
            // Grown by hand: the string's own doubling could hold twice the cap.
            bytes.reserve(
                static_cast<std::size_t>(std::min<std::uint64_t>(limit, 2 * bytes.capacity() + want)));
        }
        bytes.resize(used + want);
        const ssize_t n = ::read(fd, bytes.data() + used, want);
        if (n < 0 && errno == EINTR) {
            bytes.resize(used);
            continue;
        }
        if (n < 0) {
            const int code = errno;
            bytes.clear();
            return std::string("read failed: ") + std::strerror(code);
        }
        bytes.resize(used + static_cast<std::size_t>(n));
        if (n == 0) {
            return {};
        }
        if (bytes.size() > max_bytes) {
            bytes.clear();
            bytes.shrink_to_fit();
            return "holds more than the cap of " + std::to_string(max_bytes) + " bytes (its size said " +
                   std::to_string(stated_size) + "): not read";
        }
    }
}

} // namespace

UntrustedFile read_untrusted_file(const fs::path& base, const fs::path& relative, std::uint64_t max_bytes) {
    UntrustedFile out;
    const std::string shown = (base / relative).string();
    const auto refuse = [&](const std::string& why) {
        out.bytes.clear();
        out.error = shown + ": " + why;
        return out;
    };
    const auto parts = components(relative);
    if (!parts || parts->empty()) {
        return refuse("not a path below " + base.string());
    }
    const std::string& name = parts->back();
    OpenedDirectory dir = open_below(base, *parts, parts->size() - 1);
    if (!dir.error.empty()) {
        out.error = dir.error;
        return out;
    }
    // What it is, before it is opened: opening a FIFO or a device could block or act.
    struct stat before {};
    if (::fstatat(dir.fd.get(), name.c_str(), &before, AT_SYMLINK_NOFOLLOW) != 0) {
        const int code = errno;
        return refuse(code == ENOENT ? "no such file" : std::strerror(code));
    }
    if (auto why = refusal(before, max_bytes); !why.empty()) {
        return refuse(why);
    }
    UniqueFd fd(
        ::openat(dir.fd.get(), name.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC));
    if (fd.get() < 0) {
        const int code = errno;
        return refuse(why_not_opened(dir.fd.get(), name, code));
    }
    struct stat st {};
    if (::fstat(fd.get(), &st) != 0) {
        return refuse(std::string("fstat failed: ") + std::strerror(errno));
    }
    if (st.st_dev != before.st_dev || st.st_ino != before.st_ino) {
        return refuse("replaced while it was opened: not read");
    }
    if (auto why = refusal(st, max_bytes); !why.empty()) {
        return refuse(why);
    }
    if (auto why = read_capped(fd.get(), max_bytes, static_cast<std::uint64_t>(st.st_size), out.bytes);
        !why.empty()) {
        return refuse(why);
    }
    return out;
}

UntrustedListing list_untrusted_directory(const fs::path& base, const fs::path& relative,
                                          const std::function<bool(std::string_view)>& wanted,
                                          std::size_t max_names) {
    UntrustedListing out;
    const auto parts = components(relative);
    if (!parts) {
        out.error = (base / relative).string() + ": not a path below " + base.string();
        return out;
    }
    OpenedDirectory dir = open_below(base, *parts, parts->size());
    if (!dir.error.empty()) {
        out.missing = dir.missing;
        out.error = dir.error;
        return out;
    }
    std::unique_ptr<DIR, int (*)(DIR*)> stream(::fdopendir(dir.fd.get()), &::closedir);
    if (!stream) {
        out.error = (base / relative).string() + ": " + std::strerror(errno);
        return out;
    }
    dir.fd.release(); // the stream owns it now
    while (true) {
        errno = 0; // readdir's end and its failure differ only in errno
        const dirent* entry = ::readdir(stream.get());
        if (entry == nullptr) {
            if (errno != 0) {
                out.error = (base / relative).string() + ": cannot list: " + std::strerror(errno);
            }
            break;
        }
        const std::string_view name = entry->d_name;
        if (name == "." || name == ".." || !wanted(name)) {
            continue;
        }
        if (out.names.size() < max_names) {
            out.names.emplace_back(name);
        } else {
            ++out.left_out;
        }
    }
    std::sort(out.names.begin(), out.names.end());
    return out;
}

} // namespace pkbw
