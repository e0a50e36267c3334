#pragma once
// Waiting on and writing to non-blocking sockets against a deadline, for the server and the
// upstream client: every wait is a poll() bounded by a util::monotonic_ms() deadline.
#include <cstdint>
#include <string>
#include <string_view>

namespace idem::net {

enum class Ready { ready, timeout, woken, error };

// Waits until `fd` has `events`, the deadline passes, or (wake_fd >= 0) `wake_fd` is readable.
// Readiness of `fd` wins over the wake, so a request already sent is not dropped.
Ready wait_for(int fd, short events, int64_t deadline_ms, int wake_fd = -1);

// Sends all of `bytes` (MSG_NOSIGNAL, plus `flags`, e.g. MSG_MORE), waiting for room until the
// deadline. False when the peer is gone or the deadline passed (errno ETIMEDOUT then).
bool send_all(int fd, std::string_view bytes, int64_t deadline_ms, int flags = 0);

// strerror, lower-cased at the start to read as the end of an "idem: ..." line.
std::string why(int err);

}  // namespace idem::net
