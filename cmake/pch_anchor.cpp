// The translation unit of a precompiled-header anchor library (cmake/PkbwPrecompiledHeaders.cmake):
// it compiles the precompiled header that other targets reuse, and nothing else.
