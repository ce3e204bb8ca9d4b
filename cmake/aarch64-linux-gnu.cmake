# Cross-compiling for AArch64 Linux with Debian's g++-aarch64-linux-gnu: the
# kernel library's C code (build-lib --target arm64) and the runtime, CLI and
# tests (scripts/cross_arm64.sh). Halide's generator runs on the build machine
# (an imported executable); its AArch64 objects need no compiler. Libraries are
# Debian's arm64 packages (multiarch: /usr/lib/aarch64-linux-gnu), headers the
# shared /usr/include; programs run under qemu-aarch64 (CMAKE_CROSSCOMPILING_EMULATOR).
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)
set(CMAKE_AR aarch64-linux-gnu-ar CACHE FILEPATH "")
set(CMAKE_RANLIB aarch64-linux-gnu-ranlib CACHE FILEPATH "")
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)
set(CMAKE_CROSSCOMPILING_EMULATOR qemu-aarch64;-L;/usr/aarch64-linux-gnu)
set(ENV{PKG_CONFIG_LIBDIR} /usr/lib/aarch64-linux-gnu/pkgconfig:/usr/share/pkgconfig)
