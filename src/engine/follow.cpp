#include "engine/follow.hpp"

#include <stdexcept>
#include <utility>

#include "core/exit_code.hpp"
#include "core/key.hpp"

namespace idem::engine {

int follow_exit_code(const FollowEnd& end) {
  switch (end.kind) {
    case FollowEnd::Kind::ended:
      return end.record->status == core::Status::superseded ? int(k_exit_conflict)
                                                            : core::replay_exit_code(*end.record);
    case FollowEnd::Kind::abandoned:
    case FollowEnd::Kind::replaced:
      return k_exit_abandoned;
    case FollowEnd::Kind::missing:
      break;
  }
  return k_exit_already_done;
}

Follower::Follower(std::string key, store::OwnerGone owner_gone, int64_t from, int64_t attempt)
    : key_(std::move(key)), owner_gone_(std::move(owner_gone)), offset_(from), attempt_(attempt) {}

std::optional<FollowEnd> Follower::look(store::Store& store, const Emit& emit, int64_t now_ms) {
  // While bytes come, the next ones are read at once; the record is looked at again once a look
  // finds none (the attempt's segments are read for it alone: an end shows as none).
  if (emitted_ && attempt_ != 0) {
    emitted_ = false;
    if (emit_live(store, emit) || stopped_) return std::nullopt;
  }
  emitted_ = false;
  std::optional<core::Record> r = store.get_without_output(key_);
  if (!r) return FollowEnd{FollowEnd::Kind::missing, std::nullopt};
  if (r->status == core::Status::queued) return std::nullopt;  // its attempt has not begun
  if (attempt_ == 0) attempt_ = r->attempt;
  if (r->attempt != attempt_) return FollowEnd{FollowEnd::Kind::replaced, std::move(r)};
  if (r->status == core::Status::running) {
    // The owner is judged at most every k_follow_owner_every_ms (reading /proc is most of a
    // quiet look): a death shows that much later.
    bool gone = false;
    if (now_ms - owner_judged_ms_ >= k_follow_owner_every_ms) {
      owner_judged_ms_ = now_ms;
      gone = core::owner_counts_gone(*r, now_ms, owner_gone_);
    }
    // What a dead owner published is all there is: read it to its end first.
    while (emit_live(store, emit) && gone && !stopped_) {
    }
    if (gone && !stopped_) return FollowEnd{FollowEnd::Kind::abandoned, std::move(r)};
    return std::nullopt;
  }
  if (r->status == core::Status::abandoned) {
    // Marked abandoned: its live bytes went with its run, and it stored no output.
    return FollowEnd{FollowEnd::Kind::abandoned, std::move(r)};
  }
  // The live segments are the stored output's first bytes: a follower that read them all has
  // nothing left to read (walking a 16 MiB output to its end only to find that read it all again).
  if (offset_ == 0 || offset_ < r->output_bytes) emit_stored(store, emit);
  if (stopped_) return std::nullopt;
  return FollowEnd{FollowEnd::Kind::ended, std::move(r)};
}

bool Follower::emit_live(store::Store& store, const Emit& emit) {
  bool any = false;
  const size_t count =
      store.read_live_into(key_, attempt_, offset_, k_follow_read_bytes, segments_);
  for (size_t i = 0; i < count; ++i) {
    const core::LiveSegment& segment = segments_[i];
    if (segment.end() <= offset_) continue;
    if (segment.offset > offset_) break;  // a gap: never shown (the feed writes in order)
    const bool valid =
        core::emit_segment(segment, offset_, [&](core::Stream s, std::string_view b, int64_t at) {
          if (!emit(s, b, at)) {
            stopped_ = true;
            return false;
          }
          offset_ = at;
          emitted_ = any = true;
          return true;
        });
    if (!valid)
      throw std::runtime_error("live output of key '" + core::display_key(key_) + "' is corrupt");
    if (stopped_) break;
  }
  return any;
}

void Follower::emit_stored(store::Store& store, const Emit& emit) {
  std::unique_ptr<store::OutputReader> reader = store.open_output(key_, attempt_);
  if (!reader) return;
  const core::OutputWalk walk = core::emit_stored(
      [&](int64_t at, int64_t length) { return reader->read(at, length); }, offset_,
      [&](core::Stream s, std::string_view b, int64_t at) {
        if (!emit(s, b, at)) {
          stopped_ = true;
          return false;
        }
        offset_ = at;
        emitted_ = true;
        return true;
      });
  if (!walk.valid)
    throw std::runtime_error("stored output of key '" + core::display_key(key_) + "' is corrupt");
}

}  // namespace idem::engine
