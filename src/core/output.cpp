#include "core/output.hpp"

#include <algorithm>

#include "core/duration.hpp"
#include "core/errors.hpp"

namespace idem::core {

namespace {
constexpr char k_format_v1 = 0x01;
constexpr int64_t k_frame_header = 5;
constexpr int64_t k_marks_room = 2 * k_frame_header;
// Reserved beyond the cap for the frame headers of later chunks: 13,000 of them.
constexpr size_t k_frames_slack = 64 * 1024;
}  // namespace

const char* stream_name(Stream stream) { return stream == Stream::out ? "stdout" : "stderr"; }

int64_t output_cap_arg(std::string_view flag, std::string_view text) {
  int64_t cap = size_arg(flag, text);
  if (cap > k_max_output_cap)
    throw UsageError(std::string(flag) + " " + std::string(text) +
                     " is more than the store can keep: at most " + format_size(k_max_output_cap) +
                     " (" + std::to_string(k_max_output_cap) + " bytes)");
  return cap;
}

CapturedOutput CapturedOutput::head(int64_t cap_bytes) const {
  CapturedOutput kept(cap_bytes, max_encoded_);
  for (size_t i = 0; i < chunks_.size(); ++i) {
    kept.append(chunks_[i].stream, chunks_[i].bytes);
    if (!kept.truncated_) continue;
    // The chunk that did not fit whole and every later one lost bytes to the new cap.
    for (size_t j = i + 1; j < chunks_.size(); ++j) kept.drop(chunks_[j].stream);
    break;
  }
  for (Stream stream : {Stream::out, Stream::err})
    if (lost_ & bit(stream)) kept.drop(stream);
  kept.truncated_ = kept.truncated_ || truncated_;
  return kept;
}

void CapturedOutput::drop(Stream stream) {
  truncated_ = true;
  if (lost_ & bit(stream)) return;
  lost_ |= bit(stream);
  encoded_ += k_frame_header;  // its mark
}

std::string CapturedOutput::lost_marks() const {
  std::string marks;
  for (Stream stream : {Stream::out, Stream::err}) {
    if (!(lost_ & bit(stream))) continue;
    marks.push_back(char(stream));
    marks.append(4, '\0');
  }
  return marks;
}

std::vector<Stream> CapturedOutput::lost_streams(const std::vector<ChunkView>& chunks) {
  std::vector<Stream> lost;
  for (const ChunkView& chunk : chunks)
    if (chunk.bytes.empty() && std::find(lost.begin(), lost.end(), chunk.stream) == lost.end())
      lost.push_back(chunk.stream);
  return lost;
}

void CapturedOutput::append(Stream stream, std::string_view bytes) {
  if (bytes.empty()) return;
  const bool new_frame = chunks_.empty() || chunks_.back().stream != stream;
  // The encoded maximum keeps room for the marks of the two streams, should either lose bytes.
  const int64_t framing = k_marks_room + (new_frame ? k_frame_header : 0);
  int64_t room = std::min(cap_ - stored_, max_encoded_ - encoded_ - framing);
  if (room <= 0) {
    drop(stream);
    return;
  }
  if (int64_t(bytes.size()) > room) {
    bytes = bytes.substr(0, size_t(room));
    drop(stream);
  }
  std::string& into =
      new_frame ? chunks_.emplace_back(Chunk{stream, {}}).bytes : chunks_.back().bytes;
  // Grown by doubling, but never past what the cap lets it hold, and straight to that once a
  // second doubling would pass it: a move holds the old buffer and its copy at once, so the
  // last move, from at most half the cap, costs no more than the cap itself. A capture at its
  // cap so peaks at the cap's memory, never up to twice it. (The slack is the first frame's
  // header and the format byte, which take_encoded puts in front of the first chunk's bytes in
  // place; and, at the cap, the other chunks' frame headers, so that take_encoded can append
  // them to the first without moving it. Reserved, not touched: address space, not memory.)
  const size_t needed = into.size() + bytes.size();
  if (needed > into.capacity()) {
    const int64_t doubled = int64_t(into.capacity()) * 2;
    const int64_t at_cap = int64_t(into.size()) + room;
    const size_t target = 2 * doubled < at_cap ? size_t(doubled) : size_t(at_cap) + k_frames_slack;
    into.reserve(std::max(needed, target) + size_t(k_frame_header) + 1);
  }
  into.append(bytes);
  stored_ += int64_t(bytes.size());
  encoded_ += int64_t(bytes.size()) + (new_frame ? k_frame_header : 0);
}

std::string CapturedOutput::stream_bytes(Stream stream) const {
  std::string out;
  for (const auto& chunk : chunks_)
    if (chunk.stream == stream) out += chunk.bytes;
  return out;
}

std::string CapturedOutput::encode() const {
  if (chunks_.empty() && lost_ == 0) return {};
  std::string blob;
  blob.reserve(size_t(encoded_) + 5 * (size_t(encoded_) / UINT32_MAX + 1));
  blob.push_back(k_format_v1);
  for (const auto& chunk : chunks_) {
    // A frame's length has 32 bits; a longer chunk (a CapturedOutput built with a larger maximum
    // than the store's) is written as several frames of the same stream, which decode in order.
    std::string_view rest = chunk.bytes;
    do {
      size_t take = std::min<size_t>(rest.size(), UINT32_MAX);
      blob.push_back(char(chunk.stream));
      auto n = uint32_t(take);
      for (int i = 0; i < 4; ++i) blob.push_back(char((n >> (8 * i)) & 0xff));
      blob.append(rest.substr(0, take));
      rest.remove_prefix(take);
    } while (!rest.empty());
  }
  blob += lost_marks();
  return blob;
}

namespace {
std::string frame_header(Stream stream, uint32_t n) {
  std::string header(1, char(stream));
  for (int i = 0; i < 4; ++i) header.push_back(char((n >> (8 * i)) & 0xff));
  return header;
}
}  // namespace

std::string CapturedOutput::take_encoded() {
  std::string blob;
  // A chunk too long for one frame is rare (a capture past 4 GiB): encode() handles it.
  bool framed_once = std::all_of(chunks_.begin(), chunks_.end(),
                                 [](const Chunk& c) { return c.bytes.size() <= UINT32_MAX; });
  if (!framed_once) blob = encode();
  for (size_t i = 0; framed_once && i < chunks_.size(); ++i) {
    Chunk& chunk = chunks_[i];
    std::string header = frame_header(chunk.stream, uint32_t(chunk.bytes.size()));
    if (i == 0) {
      // Grown at most once, to the final size, before the others are appended (each freed as
      // it is): the capture is never held twice over, only this chunk for a moment.
      blob = std::move(chunk.bytes);
      blob.reserve(size_t(encoded_));
      blob.insert(0, std::string(1, k_format_v1) + header);
    } else {
      blob.append(header).append(chunk.bytes);
      std::string().swap(chunk.bytes);
    }
  }
  if (framed_once && lost_ != 0) {
    if (blob.empty()) blob.push_back(k_format_v1);
    blob += lost_marks();
  }
  chunks_.clear();
  stored_ = 0;
  encoded_ = 1;
  lost_ = 0;
  return blob;
}

std::optional<std::vector<ChunkView>> CapturedOutput::chunks_of(std::string_view blob) {
  std::vector<ChunkView> chunks;
  if (blob.empty()) return chunks;
  if (blob[0] != k_format_v1) return std::nullopt;
  size_t pos = 1;
  while (pos < blob.size()) {
    if (blob.size() - pos < 5) return std::nullopt;
    auto stream = uint8_t(blob[pos]);
    if (stream != uint8_t(Stream::out) && stream != uint8_t(Stream::err)) return std::nullopt;
    uint32_t n = 0;
    for (int i = 0; i < 4; ++i) n |= uint32_t(uint8_t(blob[pos + 1 + size_t(i)])) << (8 * i);
    pos += 5;
    if (blob.size() - pos < n) return std::nullopt;
    chunks.push_back(ChunkView{Stream(stream), blob.substr(pos, n)});
    pos += n;
  }
  return chunks;
}

std::optional<CapturedOutput> CapturedOutput::decode(std::string_view blob, bool truncated) {
  auto views = chunks_of(blob);
  if (!views) return std::nullopt;
  CapturedOutput out;
  out.truncated_ = truncated;
  if (blob.empty()) return out;
  for (const ChunkView& view : *views) {
    if (view.bytes.empty()) {
      out.lost_ |= bit(view.stream);
      out.truncated_ = true;
      continue;
    }
    out.chunks_.push_back(Chunk{view.stream, std::string(view.bytes)});
    out.stored_ += int64_t(view.bytes.size());
  }
  out.cap_ = std::max<int64_t>(out.stored_, 0);
  out.encoded_ = int64_t(blob.size());
  out.max_encoded_ = std::max(out.max_encoded_, out.encoded_);
  return out;
}

OutputWalk walk_output(const EncodedReader& read, const std::function<bool(Stream)>& wants,
                       const std::function<Take(Stream, std::string_view)>& take,
                       const WalkLimits& limits) {
  OutputWalk walk;
  const int64_t window = std::max<int64_t>(limits.window, k_frame_header);
  std::string piece;     // the bytes read last,
  int64_t piece_at = 0;  // from this offset of the encoding
  int64_t pos = 0;       // where the walk is
  auto fill = [&](int64_t length) {
    piece = read(pos, length);
    piece_at = pos;
    walk.read += int64_t(piece.size());
  };
  auto held = [&] { return std::max<int64_t>(0, piece_at + int64_t(piece.size()) - pos); };
  fill(window);
  if (piece.empty()) {
    walk.complete = true;  // no output
    return walk;
  }
  if (piece[0] != k_format_v1) {
    walk.valid = false;
    return walk;
  }
  pos = 1;
  for (;;) {
    if (held() < k_frame_header) {
      if (limits.max_read > 0 && walk.read >= limits.max_read) return walk;
      fill(window);
      if (piece.empty()) {
        walk.complete = true;
        return walk;
      }
      if (int64_t(piece.size()) < k_frame_header) {
        walk.valid = false;
        return walk;
      }
    }
    const char* header = piece.data() + (pos - piece_at);
    const auto stream_byte = uint8_t(header[0]);
    if (stream_byte != uint8_t(Stream::out) && stream_byte != uint8_t(Stream::err)) {
      walk.valid = false;
      return walk;
    }
    const auto stream = Stream(stream_byte);
    uint32_t n = 0;
    for (int i = 0; i < 4; ++i) n |= uint32_t(uint8_t(header[1 + i])) << (8 * i);
    pos += k_frame_header;
    if (n == 0) {
      walk.lost |= stream_byte;
      continue;
    }
    walk.bytes[stream_byte - 1] += n;
    int64_t left = n;
    if (wants(stream)) {
      while (left > 0) {
        if (held() == 0) {
          if (limits.max_read > 0 && walk.read >= limits.max_read) return walk;
          fill(std::min(left, window));
          if (piece.empty()) {
            walk.valid = false;
            return walk;
          }
        }
        const int64_t got = std::min(held(), left);
        const Take next =
            take(stream, std::string_view(piece).substr(size_t(pos - piece_at), size_t(got)));
        pos += got;
        left -= got;
        if (next == Take::stop) return walk;
        if (next == Take::skip_frame) break;
      }
    }
    pos += left;
  }
}

}  // namespace idem::core
