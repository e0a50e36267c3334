#pragma once
// The signals the daemon handles on a thread of its own.
#include <signal.h>

namespace idem::serve {

// Signals go to one thread (sigwait), never to a handler thread; commands get them reset. Call
// before any thread starts, so every thread inherits the mask.
sigset_t block_signals();

}  // namespace idem::serve
