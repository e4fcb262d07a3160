// The translation unit of a precompiled-header anchor executable (cmake/PkbwPrecompiledHeaders.cmake):
// it compiles the precompiled header that the test executables reuse; it is never run.
int main() {
    return 0;
}
