// The stored-output decoder (core/output.hpp). Stored records are read back from a database a
// user can edit, so any blob must either decode or be refused, never crash; and whatever decodes
// must survive encode/decode unchanged and replay the same bytes per stream in the same order.
#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/output.hpp"
#include "fuzz_check.hpp"

using idem::core::CapturedOutput;
using idem::core::Chunk;
using idem::core::Stream;

namespace {

bool same_chunks(const std::vector<Chunk>& a, const std::vector<Chunk>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i].stream != b[i].stream || a[i].bytes != b[i].bytes) return false;
  return true;
}

// What replay writes: every byte tagged with its stream, in order. Chunk boundaries vanish, so
// two captures that differ only in how same-stream writes were split compare equal.
std::string tagged(const CapturedOutput& output) {
  std::string out;
  for (const auto& chunk : output.chunks())
    for (char c : chunk.bytes) {
      out.push_back(char(chunk.stream));
      out.push_back(c);
    }
  return out;
}

int64_t total_bytes(const std::vector<Chunk>& chunks) {
  int64_t n = 0;
  for (const auto& chunk : chunks) n += int64_t(chunk.bytes.size());
  return n;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view blob(reinterpret_cast<const char*>(data), size);

  auto decoded = CapturedOutput::decode(blob);
  auto decoded_truncated = CapturedOutput::decode(blob, true);
  auto views = CapturedOutput::chunks_of(blob);
  FUZZ_CHECK(decoded.has_value() == decoded_truncated.has_value());
  FUZZ_CHECK(decoded.has_value() == views.has_value());
  if (!blob.empty() && blob[0] != 0x01) FUZZ_CHECK(!decoded);
  if (!decoded) return 0;
  const CapturedOutput& output = *decoded;

  // Empty frames are the marks of streams that lost bytes to the cap: they make the capture
  // truncated whatever the store's flag says, and are not chunks.
  const std::vector<Stream> lost = CapturedOutput::lost_streams(*views);
  FUZZ_CHECK(output.truncated() == !lost.empty() && decoded_truncated->truncated());
  for (Stream stream : {Stream::out, Stream::err})
    FUZZ_CHECK(output.lost(stream) == (std::find(lost.begin(), lost.end(), stream) != lost.end()));
  FUZZ_CHECK(same_chunks(output.chunks(), decoded_truncated->chunks()));
  for (const auto& chunk : output.chunks()) {
    FUZZ_CHECK(chunk.stream == Stream::out || chunk.stream == Stream::err);
    FUZZ_CHECK(!chunk.bytes.empty());
  }
  FUZZ_CHECK(output.stored_bytes() == total_bytes(output.chunks()));
  // The whole blob is used: the version byte, then 5 header bytes and the data per frame.
  if (!blob.empty()) FUZZ_CHECK(size == 1 + 5 * views->size() + size_t(output.stored_bytes()));

  // Decoding keeps one chunk per non-empty frame, so encoding gives the frames back byte for
  // byte, then one mark per lost stream (stdout's first): the blob itself when its marks were
  // already at its end in that order. A version byte with no frames is the empty capture, which
  // encodes as nothing.
  std::string encoded = output.encode();
  if (output.chunks().empty() && lost.empty())
    FUZZ_CHECK(encoded.empty());
  else
    FUZZ_CHECK(encoded.size() ==
               1 + 5 * (output.chunks().size() + lost.size()) + size_t(output.stored_bytes()));
  if (lost.empty() && !output.chunks().empty()) FUZZ_CHECK(encoded == blob);

  auto again = CapturedOutput::decode(encoded);
  FUZZ_CHECK(again.has_value());
  FUZZ_CHECK(same_chunks(again->chunks(), output.chunks()));
  FUZZ_CHECK(again->lost(Stream::out) == output.lost(Stream::out));
  FUZZ_CHECK(again->lost(Stream::err) == output.lost(Stream::err));
  FUZZ_CHECK(again->encode() == encoded);
  FUZZ_CHECK(again->stream_bytes(Stream::out) == output.stream_bytes(Stream::out));
  FUZZ_CHECK(again->stream_bytes(Stream::err) == output.stream_bytes(Stream::err));
  FUZZ_CHECK(tagged(*again) == tagged(output));

  // Capturing the same writes live merges adjacent same-stream chunks and drops empty ones, but
  // replays the same bytes in the same order.
  CapturedOutput live;
  for (const auto& chunk : output.chunks()) live.append(chunk.stream, chunk.bytes);
  FUZZ_CHECK(!live.truncated());
  FUZZ_CHECK(live.stored_bytes() == output.stored_bytes());
  FUZZ_CHECK(live.stream_bytes(Stream::out) == output.stream_bytes(Stream::out));
  FUZZ_CHECK(live.stream_bytes(Stream::err) == output.stream_bytes(Stream::err));
  FUZZ_CHECK(tagged(live) == tagged(output));
  for (size_t i = 0; i < live.chunks().size(); ++i) {
    FUZZ_CHECK(!live.chunks()[i].bytes.empty());
    if (i > 0) FUZZ_CHECK(live.chunks()[i].stream != live.chunks()[i - 1].stream);
  }
  auto live_again = CapturedOutput::decode(live.encode());
  FUZZ_CHECK(live_again && same_chunks(live_again->chunks(), live.chunks()));

  // Under a cap the capture keeps a prefix of what replay would write, exactly `cap` bytes of it
  // when there was more, and says it was truncated exactly then.
  int64_t total = output.stored_bytes();
  int64_t cap = size > 0 ? data[size - 1] % (total + 2) : 0;
  CapturedOutput capped(cap);
  for (const auto& chunk : output.chunks()) capped.append(chunk.stream, chunk.bytes);
  FUZZ_CHECK(capped.stored_bytes() == (total < cap ? total : cap));
  FUZZ_CHECK(capped.truncated() == (total > cap));
  FUZZ_CHECK(std::string_view(tagged(output)).starts_with(tagged(capped)));
  FUZZ_CHECK(capped.stored_bytes() == total_bytes(capped.chunks()));
  return 0;
}
