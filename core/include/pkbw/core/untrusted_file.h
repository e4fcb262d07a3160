// Reading files that untrusted code could have written: the candidate's trace folder
// (docs/tracing.md, "What the launcher reads, and what a bad file costs"). Below a trusted base
// directory no symbolic link is followed, only a regular file with a single link is read, and never
// more than a cap, whatever the file's size says.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace pkbw {

// The bytes of a file, or why it was refused: "<base>/<relative>: <reason>".
struct UntrustedFile {
    std::string bytes;
    std::string error; // empty when the file was read
    bool ok() const { return error.empty(); }
};

// Reads base/relative. `base` is the caller's (opened as given, links included); every directory of
// `relative` is opened from its parent's descriptor with O_NOFOLLOW, and so is the file, so that a
// link swapped in meanwhile is not followed either. Refused, with the reason: a `relative` that is
// absolute, empty or has "..", a missing file, a symbolic link (file or directory), anything but a
// regular file (never opened, so a FIFO is not waited on), a file with more than one hard link (it
// may be a file from elsewhere), a file whose size is over `max_bytes` (checked before anything is
// read: a sparse file costs nothing), and one that yields more than `max_bytes` when read (its size
// lied, or it grew meanwhile). At most max_bytes + 1 bytes are ever held.
UntrustedFile read_untrusted_file(const std::filesystem::path& base, const std::filesystem::path& relative,
                                  std::uint64_t max_bytes);

// The names in base/relative (reached as read_untrusted_file reaches a file's directory) that `wanted`
// accepts, sorted. Entries are neither followed nor opened: a name may be a link or a directory,
// which read_untrusted_file then refuses with its reason.
struct UntrustedListing {
    std::vector<std::string> names; // at most max_names, in the directory's order before the sort
    std::size_t left_out = 0;       // accepted names past max_names
    bool missing = false;           // base/relative does not exist (error names it too)
    std::string error;              // "<path>: <reason>" when the directory could not be read
    bool ok() const { return error.empty(); }
};
UntrustedListing list_untrusted_directory(const std::filesystem::path& base,
                                          const std::filesystem::path& relative,
                                          const std::function<bool(std::string_view)>& wanted,
                                          std::size_t max_names);

} // namespace pkbw
