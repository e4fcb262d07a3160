// Writes the synthetic Chrome trace used by the tools/check_chrome_trace.py CTest test.
#include "pkbw/core/chrome_trace.h"
#include "trace_test_util.h"

#include <cstdio>

int main(int argc, char** argv) {
    if (argc != 2) {
        std::fprintf(stderr, "usage: %s OUTPUT.json\n", argv[0]);
        return 2;
    }
    pkbw::export_chrome_trace(pkbw::testing::chrome_sample(), argv[1]);
    return 0;
}
