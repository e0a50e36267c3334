// The one translation unit that holds Catch2's main(); every other file in tests/unit only
// includes the header.
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
