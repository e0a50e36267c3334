#include "core/errors.hpp"

#include <sys/resource.h>

#include <cerrno>
#include <cstring>

namespace idem {

Error os_error(const std::string& what, int err) {
  std::string message = what + ": " + std::strerror(err);
  struct rlimit limit {};
  if (err == EMFILE && ::getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY)
    message += " (the limit on open files, ulimit -n, is " + std::to_string(limit.rlim_cur) +
               "; raise it to let idem run)";
  return Error(k_exit_os, message);
}

}  // namespace idem
