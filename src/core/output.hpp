#pragma once
// Captured output: the command's stdout and stderr as one sequence of chunks, so the order of
// writes across both streams is kept for replay. Binary-safe.
//
// Stored encoding (version 1): the byte 0x01, then per chunk: stream byte (1 = stdout,
// 2 = stderr), length as 4 bytes little-endian, then the bytes. Adjacent writes to the same stream
// are merged into one chunk. A capture cut by its cap ends with one empty frame for each stream
// that lost bytes (stdout's first): readers that do not know the mark see an empty write, and
// `idem show` names the streams it marks.
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace idem::core {

// What the store can keep. SQLite refuses a blob or a row over SQLITE_LIMIT_LENGTH, 1,000,000,000
// bytes unless built otherwise (the SQLite store checks its limit at open). An encoded output
// never passes k_max_encoded_output, whatever the cap and however the writes interleave (each
// chunk costs 5 bytes of framing), which leaves 50 MB of the row for the request and the rest.
// --max-output is refused above k_max_output_cap, so a cap that is accepted is one the store keeps.
constexpr int64_t k_store_row_limit = 1'000'000'000;
constexpr int64_t k_max_encoded_output = k_store_row_limit - 50'000'000;
constexpr int64_t k_max_output_cap = int64_t(900) * 1024 * 1024;

// Parses a --max-output value (a size, see parse_size): a usage error if it is not one, or if it
// is above k_max_output_cap, with the limit in the message.
int64_t output_cap_arg(std::string_view flag, std::string_view text);

enum class Stream : uint8_t { out = 1, err = 2 };
// "stdout" or "stderr".
const char* stream_name(Stream stream);

struct Chunk {
  Stream stream;
  std::string bytes;
};

// A chunk of an encoded output, seen where it lies in the encoding.
struct ChunkView {
  Stream stream;
  std::string_view bytes;
};

// An encoded output read a piece at a time (Store::read_output): up to `length` bytes of the
// encoding from byte `offset`, fewer at its end, none past it.
using EncodedReader = std::function<std::string(int64_t offset, int64_t length)>;

// What walk_output's `take` says after a piece of a frame: more of it, none (the rest of this
// frame is skipped, not read), or stop the walk.
enum class Take { more, skip_frame, stop };

// How walk_output reads: pieces of at most `window` bytes; and at most `max_read` bytes of the
// encoding in all (0: no bound) before it gives up as incomplete.
struct WalkLimits {
  int64_t window = 64 * 1024;
  int64_t max_read = 0;
};

// What walk_output found.
struct OutputWalk {
  bool valid = true;          // false: not an encoding (corrupt, or cut short)
  bool complete = false;      // reached the end (false: stopped by `take` or max_read, or invalid)
  int64_t bytes[2] = {0, 0};  // the sizes of stdout's and stderr's frames met (all, if complete)
  uint8_t lost = 0;           // bit 1 stdout, bit 2 stderr: the marks of lost streams met
  int64_t read = 0;           // bytes of the encoding read
  int64_t size(Stream stream) const { return bytes[uint8_t(stream) - 1]; }
  bool lost_bytes(Stream stream) const { return (lost & uint8_t(stream)) != 0; }
};

// Walks an encoded output through `read` without holding more than a piece of it: `take` gets
// the bytes of each frame of a stream that `wants` names, in order, a piece at a time; the
// frames of other streams are stepped over unread. So a reader shows the head of a stream of
// any size, or streams one out, holding a window.
OutputWalk walk_output(const EncodedReader& read, const std::function<bool(Stream)>& wants,
                       const std::function<Take(Stream, std::string_view)>& take,
                       const WalkLimits& limits = {});

class CapturedOutput {
 public:
  explicit CapturedOutput(int64_t cap_bytes = INT64_MAX,
                          int64_t max_encoded_bytes = k_max_encoded_output)
      : cap_(cap_bytes), max_encoded_(max_encoded_bytes) {}

  // Keeps what fits under the cap and, framing included, under the encoded maximum; the rest is
  // dropped and the capture marked truncated.
  void append(Stream stream, std::string_view bytes);

  const std::vector<Chunk>& chunks() const { return chunks_; }
  bool truncated() const { return truncated_; }
  // Whether the cap dropped bytes of `stream` (false when a record from before the mark says
  // only that it was truncated).
  bool lost(Stream stream) const { return (lost_ & bit(stream)) != 0; }
  int64_t stored_bytes() const { return stored_; }
  std::string stream_bytes(Stream stream) const;
  // A capture of what this one would have kept under `cap_bytes`: its first bytes, in order,
  // marked truncated when this one is or when bytes were left out.
  CapturedOutput head(int64_t cap_bytes) const;

  std::string encode() const;
  // The same bytes as encode(), made from the chunks' own memory: the first chunk becomes the
  // blob, the others are appended and freed one by one, so a capture at its cap is never held
  // twice. Leaves this capture empty.
  std::string take_encoded();
  // Returns nullopt if the blob is not a valid encoding (a corrupt or foreign record).
  static std::optional<CapturedOutput> decode(std::string_view blob, bool truncated = false);
  // The chunks of an encoding, in order, as views into `blob`: nothing is copied, so a replay
  // writes a stored output of up to the cap from the one copy it read. nullopt as decode().
  // Its empty frames are the marks of lost streams, see lost_streams().
  static std::optional<std::vector<ChunkView>> chunks_of(std::string_view blob);
  // The streams that the marks among `chunks` say lost bytes to the cap.
  static std::vector<Stream> lost_streams(const std::vector<ChunkView>& chunks);

 private:
  int64_t cap_;
  int64_t max_encoded_;
  int64_t stored_ = 0;
  int64_t encoded_ = 1;  // the size of encode(): format byte, frames
  bool truncated_ = false;
  uint8_t lost_ = 0;  // bit(stream) for each stream that lost bytes
  std::vector<Chunk> chunks_;

  static uint8_t bit(Stream stream) { return uint8_t(stream); }
  void drop(Stream stream);
  // The frames that mark lost streams, for the end of the encoding.
  std::string lost_marks() const;
};

}  // namespace idem::core
