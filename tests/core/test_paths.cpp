#include "pkbw/core/paths.h"

#include <cstdlib>
#include <gtest/gtest.h>
#include <optional>
#include <string>

namespace {

// Sets or unsets an environment variable for one test, restoring it afterwards.
class EnvVar {
public:
    EnvVar(const char* name, const char* value)
        : name_(name) {
        if (const char* old = std::getenv(name))
            old_ = old;
        if (value)
            setenv(name, value, 1);
        else
            unsetenv(name);
    }
    ~EnvVar() {
        if (old_)
            setenv(name_, old_->c_str(), 1);
        else
            unsetenv(name_);
    }

private:
    const char* name_;
    std::optional<std::string> old_;
};

TEST(Paths, StorePathPrecedence) {
    EnvVar home("HOME", "/home/tester");
    {
        EnvVar store("PKBW_STORE", "/data/my.db");
        EnvVar xdg("XDG_DATA_HOME", "/xdg/data");
        EXPECT_EQ(pkbw::default_store_path(), "/data/my.db");
    }
    {
        EnvVar store("PKBW_STORE", nullptr);
        EnvVar xdg("XDG_DATA_HOME", "/xdg/data");
        EXPECT_EQ(pkbw::default_store_path(), "/xdg/data/pkbw/runs.db");
    }
    {
        EnvVar store("PKBW_STORE", ""); // empty counts as unset
        EnvVar xdg("XDG_DATA_HOME", "");
        EXPECT_EQ(pkbw::default_store_path(), "/home/tester/.local/share/pkbw/runs.db");
    }
}

TEST(Paths, CacheDirPrecedence) {
    EnvVar home("HOME", "/home/tester");
    {
        EnvVar cache("PKBW_CACHE_DIR", "/fast/cache");
        EnvVar xdg("XDG_CACHE_HOME", "/xdg/cache");
        EXPECT_EQ(pkbw::default_cache_dir(), "/fast/cache");
    }
    {
        EnvVar cache("PKBW_CACHE_DIR", nullptr);
        EnvVar xdg("XDG_CACHE_HOME", "/xdg/cache");
        EXPECT_EQ(pkbw::default_cache_dir(), "/xdg/cache/pkbw");
    }
    {
        EnvVar cache("PKBW_CACHE_DIR", nullptr);
        EnvVar xdg("XDG_CACHE_HOME", nullptr);
        EXPECT_EQ(pkbw::default_cache_dir(), "/home/tester/.cache/pkbw");
    }
}

} // namespace
