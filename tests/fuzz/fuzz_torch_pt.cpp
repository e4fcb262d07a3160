// libFuzzer target for the torch.save reader. The first byte picks what the rest is: an archive as it
// stands (zip parsing), or a data.pkl wrapped in a valid archive with correct CRCs and two storages
// (the unpickler and tensor mapping, which the CRC would otherwise shield from mutations).
#include "../core/torch_pt_zip_writer.h"
#include "pkbw/core/error.h"
#include "pkbw/core/torch_pt.h"

#include <cstddef>
#include <cstdint>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size == 0) {
        return 0;
    }
    const bool wrap = (data[0] & 1) != 0;
    const std::string rest(reinterpret_cast<const char*>(data + 1), size - 1);
    try {
        if (wrap) {
            const auto archive = pkbw::test::make_torch_archive(rest);
            (void)pkbw::parse_torch_pt(archive, "fuzz.pt");
        } else {
            (void)pkbw::parse_torch_pt({reinterpret_cast<const std::byte*>(rest.data()), rest.size()},
                                       "fuzz.pt");
        }
    } catch (const pkbw::Error&) {
        // Refusing is the expected outcome for most inputs; anything else escaping is a bug.
    }
    return 0;
}
