#pragma once
// Test-only crash points. In a build configured with IDEM_TEST_HOOKS=ON, IDEM_CRASH_POINT("name")
// kills the process with SIGKILL when $IDEM_TEST_CRASH_AT equals "name", so tests can prove what
// a crash at exactly that step leaves behind. In every other build it compiles to nothing.
#ifdef IDEM_TEST_HOOKS
#include <signal.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>

namespace idem::util {
inline void crash_point(const char* name) {
  const char* at = std::getenv("IDEM_TEST_CRASH_AT");
  if (at != nullptr && std::strcmp(at, name) == 0) ::kill(::getpid(), SIGKILL);
}
}  // namespace idem::util
#define IDEM_CRASH_POINT(name) ::idem::util::crash_point(name)
#else
#define IDEM_CRASH_POINT(name) ((void)0)
#endif
