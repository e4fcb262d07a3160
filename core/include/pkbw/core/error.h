// Errors raised by core. Every message names the file, field, rank or tensor it is about, so that a
// user looking at one line knows what to fix; nothing is silently dropped.
#pragma once

#include <stdexcept>
#include <string>

namespace pkbw {

// Base of every error core throws.
class Error : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// Outside data (a file, a JSON line, a store) is malformed. The message names the source and field.
class FormatError : public Error {
public:
    using Error::Error;
};

// A store whose schema is newer than this build understands, or otherwise unusable.
class StoreError : public Error {
public:
    using Error::Error;
};

} // namespace pkbw
