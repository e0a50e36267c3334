#include "serve/signals.hpp"

#include "proc/runner.hpp"

namespace idem::serve {

sigset_t block_signals() {
  proc::install_child_handlers();
  sigset_t handled;
  sigemptyset(&handled);
  for (int sig : {SIGTERM, SIGINT, SIGHUP}) sigaddset(&handled, sig);
  pthread_sigmask(SIG_BLOCK, &handled, nullptr);
  ::signal(SIGPIPE, SIG_IGN);  // sends use MSG_NOSIGNAL; this covers any other write
  return handled;
}

}  // namespace idem::serve
