# The AArch64 build (cmake/arm64: kernels, runtime, CLI and tests, cross-compiled
# with this build's generator) in build/arm64, target `arm64`, when Debian's
# g++-aarch64-linux-gnu and its arm64 libraries are installed (scripts/setup.sh
# installs them, and unpacks Debian's arm64 SentencePiece into
# HALFORMER_ARM64_DEPS, as its amd64 and arm64 packages conflict). Its programs
# run under qemu-aarch64 (HALFORMER_QEMU_AARCH64), whose arm64 glibc comes from
# the multiarch packages (libc6:arm64).
find_program(HALFORMER_AARCH64_CXX aarch64-linux-gnu-g++)
find_program(HALFORMER_QEMU_AARCH64 qemu-aarch64)
set(HALFORMER_ARM64_DEPS ${CMAKE_BINARY_DIR}/arm64-deps CACHE PATH "Debian's arm64 SentencePiece, unpacked")
set(arm64_default OFF)
if (HALFORMER_AARCH64_CXX AND EXISTS ${HALFORMER_ARM64_DEPS}/usr/lib/aarch64-linux-gnu/pkgconfig/sentencepiece.pc)
  set(arm64_default ON)
endif ()
option(HALFORMER_ARM64 "Cross-build the AArch64 kernels, runtime, CLI and tests (build/arm64)" ${arm64_default})
message(STATUS "halformer: AArch64 build (HALFORMER_ARM64): ${HALFORMER_ARM64}")
if (HALFORMER_ARM64)
  include(ExternalProject)
  ExternalProject_Add(arm64
    SOURCE_DIR ${CMAKE_SOURCE_DIR}/cmake/arm64
    BINARY_DIR ${CMAKE_BINARY_DIR}/arm64
    CMAKE_GENERATOR Ninja
    CMAKE_ARGS -DCMAKE_TOOLCHAIN_FILE=${CMAKE_SOURCE_DIR}/cmake/aarch64-linux-gnu.cmake -DCMAKE_BUILD_TYPE=Release
               -DCMAKE_MAKE_PROGRAM=${CMAKE_MAKE_PROGRAM} -DHalide_DIR=$<TARGET_FILE_DIR:Halide::Halide>/cmake/Halide
               -DBoost_DIR=${Boost_DIR} -DHALFORMER_SOURCE_DIR=${CMAKE_SOURCE_DIR}
               -DHALFORMER_GENERATOR=$<TARGET_FILE:halformer.generators>
               -DHALFORMER_BUILD_KNOB_FILE=${HALFORMER_ARM64_KNOB_FILE}
               -DHALFORMER_BUILT_FIXTURES=${CMAKE_BINARY_DIR}/fixtures -DHALFORMER_ARM64_DEPS=${HALFORMER_ARM64_DEPS}
    BUILD_ALWAYS ON
    USES_TERMINAL_BUILD ON # its progress as it goes
    INSTALL_COMMAND ""
    DEPENDS halformer.generators)
endif ()
