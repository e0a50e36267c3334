#pragma once
// What the fuzz targets assert with: a violated property prints itself and aborts, which
// libFuzzer reports as a crash and saves the input as an artifact.
#include <cstdio>
#include <cstdlib>

#define FUZZ_CHECK(cond)                                                                       \
  do {                                                                                         \
    if (!(cond)) {                                                                             \
      std::fprintf(stderr, "fuzz property violated: %s (%s:%d)\n", #cond, __FILE__, __LINE__); \
      std::abort();                                                                            \
    }                                                                                          \
  } while (0)
