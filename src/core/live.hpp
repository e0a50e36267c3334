#pragma once
// Live output (SPEC §10): what a running attempt has written so far, kept in the store as
// segments while it runs, so that a follower anywhere (`idem tail -f`, the page's event stream)
// reads it as it grows and then goes on from the stored output at the same offset.
//
// Offsets count the output's bytes, stdout's and stderr's together in the order written (the
// capture's order, core/output.hpp), framing aside: the stored output and the live segments of
// one attempt hold the same bytes at the same offsets, the segments being a prefix of it.
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/output.hpp"

namespace idem::core {

// A piece of a running attempt's output: `size` bytes from byte `offset` on, as frames of the
// stored encoding (core/output.hpp: stream byte, length as 4 bytes little-endian, the bytes),
// without its format byte.
struct LiveSegment {
  int64_t offset = 0;
  int64_t size = 0;
  std::string frames;
  int64_t end() const { return offset + size; }
};

// Adds `bytes` of `stream` to `segment` as one frame (none for no bytes).
void add_frame(LiveSegment& segment, Stream stream, std::string_view bytes);

// Calls `emit` with each frame's bytes of `segment` from byte `from` on (the part of a frame
// before it left out), in order, and the offset after them; stops early when `emit` returns
// false. Returns false when the frames are not an encoding (a corrupt row).
bool emit_segment(const LiveSegment& segment, int64_t from,
                  const std::function<bool(Stream, std::string_view, int64_t after)>& emit);

// The same for a stored output read through `read` (its whole encoding, format byte first):
// the bytes from `from` on, a piece at a time. Returns the walk (its validity, its sizes).
OutputWalk emit_stored(const EncodedReader& read, int64_t from,
                       const std::function<bool(Stream, std::string_view, int64_t after)>& emit);

}  // namespace idem::core
