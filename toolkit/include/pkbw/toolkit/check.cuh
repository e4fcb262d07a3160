// Checked CUDA, NCCL and cuBLAS calls for references (pkbw reference toolkit, docs/problems.md).
//
//     PKBW_CHECK(ctx, ncclAllReduce(...));      // returns ctx.fail("...") from the enclosing function
//     PKBW_TRY(pkbw::tk::gemm(ctx, g));        // passes on a toolkit call's non-zero result
//     return pkbw::tk::finish(ctx);            // the launch error of the last kernel, or 0
//
// The failure message names the library's error string, the expression and its file:line, so that a
// reference that fails on a GPU says where.
#pragma once

#include "pkbw/solution.h"

#include <cstdio>
#include <cublas_v2.h>

namespace pkbw::tk {

inline bool is_ok(cudaError_t status) {
    return status == cudaSuccess;
}
inline bool is_ok(ncclResult_t status) {
    return status == ncclSuccess;
}
inline bool is_ok(cublasStatus_t status) {
    return status == CUBLAS_STATUS_SUCCESS;
}
inline const char* error_string(cudaError_t status) {
    return cudaGetErrorString(status);
}
inline const char* error_string(ncclResult_t status) {
    return ncclGetErrorString(status);
}
inline const char* error_string(cublasStatus_t status) {
    return cublasGetStatusString(status);
}

// Records "<error>: <expression> (<file>:<line>)" and returns the code to return from pkbw_solution.
inline int fail_call(const Context& ctx, const char* error, const char* expression, const char* file,
                     int line) {
    char message[512];
    std::snprintf(message, sizeof message, "%s: %.300s (%s:%d)", error, expression, file, line);
    return ctx.fail(message);
}

// 0, or ctx.fail with the pending launch error (cudaGetLastError) of the kernels queued so far.
inline int finish(const Context& ctx) {
    const cudaError_t err = cudaGetLastError();
    return err == cudaSuccess ? 0 : ctx.fail(cudaGetErrorString(err));
}

} // namespace pkbw::tk

// Evaluates a CUDA runtime, NCCL or cuBLAS call; on failure returns ctx.fail(...) from the caller.
#define PKBW_CHECK(ctx, expr)                                                                                \
    do {                                                                                                     \
        const auto pkbw_check_status_ = (expr);                                                              \
        if (!::pkbw::tk::is_ok(pkbw_check_status_))                                                          \
            return ::pkbw::tk::fail_call((ctx), ::pkbw::tk::error_string(pkbw_check_status_), #expr,         \
                                         __FILE__, __LINE__);                                                \
    } while (0)

// Evaluates an int-returning call (a toolkit function, ctx.fail); returns its value when non-zero.
#define PKBW_TRY(expr)                                                                                       \
    do {                                                                                                     \
        if (const int pkbw_try_rc_ = (expr))                                                                 \
            return pkbw_try_rc_;                                                                             \
    } while (0)
