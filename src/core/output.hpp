#pragma once
// Captured output: the command's stdout and stderr as one sequence of chunks, so the order of
// writes across both streams is kept for replay. Binary-safe.
//
// Stored encoding (version 1): the byte 0x01, then per chunk: stream byte (1 = stdout,
// 2 = stderr), length as 4 bytes little-endian, then the bytes. Adjacent writes to the same stream
// are merged into one chunk.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace idem::core {

enum class Stream : uint8_t { out = 1, err = 2 };

struct Chunk {
  Stream stream;
  std::string bytes;
};

class CapturedOutput {
 public:
  explicit CapturedOutput(int64_t cap_bytes = INT64_MAX) : cap_(cap_bytes) {}

  // Keeps what fits under the cap; the rest is dropped and the capture marked truncated.
  void append(Stream stream, std::string_view bytes);

  const std::vector<Chunk>& chunks() const { return chunks_; }
  bool truncated() const { return truncated_; }
  int64_t stored_bytes() const { return stored_; }
  std::string stream_bytes(Stream stream) const;

  std::string encode() const;
  // Returns nullopt if the blob is not a valid encoding (a corrupt or foreign record).
  static std::optional<CapturedOutput> decode(std::string_view blob, bool truncated = false);

 private:
  int64_t cap_;
  int64_t stored_ = 0;
  bool truncated_ = false;
  std::vector<Chunk> chunks_;
};

}  // namespace idem::core
