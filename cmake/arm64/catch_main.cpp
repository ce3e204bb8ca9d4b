// Catch2 v2 main for the AArch64 tests: Debian ships libCatch2WithMain.a for
// the build machine only.
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
