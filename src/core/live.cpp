#include "core/live.hpp"

namespace idem::core {

namespace {
constexpr size_t k_segment_frame_header = 5;
}

void add_frame(LiveSegment& segment, Stream stream, std::string_view bytes) {
  while (!bytes.empty()) {
    const size_t take = std::min<size_t>(bytes.size(), UINT32_MAX);
    const auto n = uint32_t(take);
    segment.frames.push_back(char(stream));
    for (int i = 0; i < 4; ++i) segment.frames.push_back(char((n >> (8 * i)) & 0xff));
    segment.frames.append(bytes.substr(0, take));
    segment.size += int64_t(take);
    bytes.remove_prefix(take);
  }
}

bool emit_segment(const LiveSegment& segment, int64_t from,
                  const std::function<bool(Stream, std::string_view, int64_t after)>& emit) {
  std::string_view rest = segment.frames;
  int64_t at = segment.offset;
  while (!rest.empty()) {
    if (rest.size() < k_segment_frame_header) return false;
    const auto stream = uint8_t(rest[0]);
    if (stream != uint8_t(Stream::out) && stream != uint8_t(Stream::err)) return false;
    uint32_t n = 0;
    for (int i = 0; i < 4; ++i) n |= uint32_t(uint8_t(rest[1 + size_t(i)])) << (8 * i);
    rest.remove_prefix(k_segment_frame_header);
    if (rest.size() < n) return false;
    std::string_view bytes = rest.substr(0, n);
    rest.remove_prefix(n);
    const int64_t end = at + int64_t(n);
    if (end > from) {
      if (from > at) bytes.remove_prefix(size_t(from - at));
      if (!bytes.empty() && !emit(Stream(stream), bytes, end)) return true;
    }
    at = end;
  }
  return at == segment.end();
}

OutputWalk emit_stored(const EncodedReader& read, int64_t from,
                       const std::function<bool(Stream, std::string_view, int64_t after)>& emit) {
  int64_t at = 0;  // the offset of the next byte the walk gives
  return walk_output(
      read, [](Stream) { return true; },
      [&](Stream stream, std::string_view bytes) {
        const int64_t end = at + int64_t(bytes.size());
        if (end > from) {
          if (from > at) bytes.remove_prefix(size_t(from - at));
          at = end;
          if (!emit(stream, bytes, end)) return Take::stop;
        }
        at = end;
        return Take::more;
      });
}

}  // namespace idem::core
