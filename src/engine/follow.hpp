#pragma once
// Following a key's latest attempt (SPEC §10): its output from an offset, read from the live
// segments while it runs (engine/live_feed.hpp) and from the stored output once it has ended,
// at the same offsets, so a follower that starts late, or comes back, gets every byte once.
// `idem tail` and the page's event stream drive it, a look at a time.
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/live.hpp"
#include "core/output.hpp"
#include "core/record.hpp"
#include "store/store.hpp"

namespace idem::engine {

// How far a look reads live segments at most (about): a look holds no more.
inline constexpr int64_t k_follow_read_bytes = 1024 * 1024;
// How often a look judges whether a running attempt's owner is gone, at most.
inline constexpr int64_t k_follow_owner_every_ms = 200;

struct FollowEnd {
  enum class Kind {
    ended,      // the attempt has an outcome (or was superseded, or expired): `record`
    abandoned,  // its owner died mid-run: `record`, as it stands (maybe still marked running)
    missing,    // there is no record of the key (or it was removed while followed)
    replaced,   // another attempt took the key over: `record` is the new one
  };
  Kind kind = Kind::missing;
  std::optional<core::Record> record;  // without output
};

// The exit code a follow ends with, as `idem tail -f` exits and the page's `end` event says: an
// ended attempt's as a replay gives it (65 for a superseded key, which ran nothing), 69 for an
// abandoned or replaced one, 1 for a record that is gone.
int follow_exit_code(const FollowEnd& end);

class Follower {
 public:
  // Bytes of `stream` and the offset after them; false: stop (the reader is gone).
  using Emit = std::function<bool(core::Stream, std::string_view, int64_t after)>;

  // Follows `key` (a record's name) from byte `from` on; `owner_gone` judges a running record's
  // owner here (proc::owner_gone; a lease is judged by itself).
  // With `attempt`, that attempt alone (another one found is `replaced`); 0: the latest.
  Follower(std::string key, store::OwnerGone owner_gone, int64_t from = 0, int64_t attempt = 0);

  // One look through `store` (any connection: a daemon leases one per look) at `now_ms`: emits what
  // there is past offset(); the end once the attempt has ended and every byte of it was emitted, or
  // nullopt while it runs or waits its turn (look again). Throws StoreError when the store cannot
  // be read, std::runtime_error for a corrupt output.
  std::optional<FollowEnd> look(store::Store& store, const Emit& emit, int64_t now_ms);

  int64_t offset() const { return offset_; }
  // The attempt followed (0 until the key's attempt started).
  int64_t attempt() const { return attempt_; }
  // Whether the last look emitted bytes (the next look may find more at once).
  bool emitted() const { return emitted_; }
  // Whether an emit asked to stop.
  bool stopped() const { return stopped_; }

 private:
  bool emit_live(store::Store& store, const Emit& emit);
  void emit_stored(store::Store& store, const Emit& emit);

  const std::string key_;
  const store::OwnerGone owner_gone_;
  int64_t offset_;
  int64_t attempt_ = 0;
  int64_t owner_judged_ms_ = INT64_MIN / 2;  // when the owner was last judged (never yet)
  bool emitted_ = false;
  bool stopped_ = false;
  std::vector<core::LiveSegment> segments_;  // read into by every look, their buffers kept
};

}  // namespace idem::engine
