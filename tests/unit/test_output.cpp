// CapturedOutput: ordered chunks of stdout/stderr, a cap, and the stored encoding.
#include <catch2/catch.hpp>
#include <random>
#include <string>
#include <vector>

#include "core/errors.hpp"
#include "core/output.hpp"

// The cases and helpers of this file, apart from every other unit file's (unity builds).
namespace unit_output {

using idem::core::CapturedOutput;
using idem::core::Chunk;
using idem::core::Stream;

namespace {

std::string nul_bytes(const char* text, size_t n) { return std::string(text, n); }

// Byte offsets in `blob` where a chunk ends (a prefix cut there is a shorter valid capture).
std::vector<size_t> chunk_ends(const CapturedOutput& output) {
  std::vector<size_t> ends{1};
  for (const auto& chunk : output.chunks()) ends.push_back(ends.back() + 5 + chunk.bytes.size());
  return ends;
}

}  // namespace

TEST_CASE("output: chunks keep the order of writes across streams", "[output]") {
  CapturedOutput out;
  out.append(Stream::out, "1");
  out.append(Stream::err, "2");
  out.append(Stream::out, "3");
  out.append(Stream::err, "4");
  REQUIRE(out.chunks().size() == 4);
  CHECK(out.chunks()[0].stream == Stream::out);
  CHECK(out.chunks()[0].bytes == "1");
  CHECK(out.chunks()[1].stream == Stream::err);
  CHECK(out.chunks()[1].bytes == "2");
  CHECK(out.chunks()[2].stream == Stream::out);
  CHECK(out.chunks()[2].bytes == "3");
  CHECK(out.chunks()[3].stream == Stream::err);
  CHECK(out.chunks()[3].bytes == "4");
  CHECK(out.stream_bytes(Stream::out) == "13");
  CHECK(out.stream_bytes(Stream::err) == "24");
  CHECK(out.stored_bytes() == 4);
  CHECK_FALSE(out.truncated());
}

TEST_CASE("output: adjacent writes to one stream merge; empty writes are ignored", "[output]") {
  CapturedOutput out;
  out.append(Stream::out, "ab");
  out.append(Stream::out, "");
  out.append(Stream::out, "cd");
  out.append(Stream::err, "");
  out.append(Stream::out, "e");
  REQUIRE(out.chunks().size() == 1);
  CHECK(out.chunks()[0].bytes == "abcde");
  out.append(Stream::err, "x");
  out.append(Stream::err, "y");
  REQUIRE(out.chunks().size() == 2);
  CHECK(out.chunks()[1].stream == Stream::err);
  CHECK(out.chunks()[1].bytes == "xy");
  CHECK(out.stored_bytes() == 7);
}

TEST_CASE("output: the cap keeps exactly the head and marks truncation", "[output]") {
  CapturedOutput out(10);
  out.append(Stream::out, "12345");
  out.append(Stream::err, "678");
  CHECK_FALSE(out.truncated());
  out.append(Stream::out, "90abc");
  CHECK(out.truncated());
  CHECK(out.stored_bytes() == 10);
  REQUIRE(out.chunks().size() == 3);
  CHECK(out.chunks()[2].stream == Stream::out);
  CHECK(out.chunks()[2].bytes == "90");
  out.append(Stream::err, "more");
  out.append(Stream::out, "more");
  CHECK(out.chunks().size() == 3);
  CHECK(out.stored_bytes() == 10);
  CHECK(out.stream_bytes(Stream::out) == "1234590");
  CHECK(out.stream_bytes(Stream::err) == "678");
  CHECK(out.lost(Stream::out));
  CHECK(out.lost(Stream::err));
  // The truncation, and which streams lost bytes, survive the round trip through the marks.
  auto decoded = CapturedOutput::decode(out.encode());
  REQUIRE(decoded.has_value());
  CHECK(decoded->truncated());
  CHECK(decoded->lost(Stream::out));
  CHECK(decoded->lost(Stream::err));
  CHECK(decoded->stream_bytes(Stream::out) == "1234590");
  CHECK(decoded->chunks().size() == 3);
  CHECK(decoded->encode() == out.encode());
}

TEST_CASE("output: only the streams that lost bytes are marked, stdout's mark first", "[output]") {
  CapturedOutput out(4);
  out.append(Stream::out, "ab");
  out.append(Stream::err, "cdef");  // stderr loses "ef"
  out.append(Stream::err, "g");
  CHECK(out.lost(Stream::err));
  CHECK_FALSE(out.lost(Stream::out));
  std::string blob = out.encode();
  CHECK(blob.substr(blob.size() - 5) == nul_bytes("\x02\0\0\0\0", 5));
  auto views = CapturedOutput::chunks_of(blob);
  REQUIRE(views.has_value());
  CHECK(CapturedOutput::lost_streams(*views) == std::vector<Stream>{Stream::err});
  // take_encoded gives the same bytes.
  CHECK(out.take_encoded() == blob);
  // A capture that lost nothing has no mark; nor does a record from before the marks.
  CapturedOutput whole;
  whole.append(Stream::out, "ab");
  auto whole_views = CapturedOutput::chunks_of(whole.encode());
  REQUIRE(whole_views.has_value());
  CHECK(CapturedOutput::lost_streams(*whole_views).empty());
  auto old = CapturedOutput::decode(whole.encode(), true);
  REQUIRE(old.has_value());
  CHECK(old->truncated());
  CHECK_FALSE(old->lost(Stream::out));
  CHECK_FALSE(old->lost(Stream::err));
}

TEST_CASE("output: a head under a smaller cap marks what it cut and what came after", "[output]") {
  CapturedOutput all;
  all.append(Stream::out, "1234");
  all.append(Stream::err, "56");
  all.append(Stream::out, "78");
  CapturedOutput kept = all.head(5);
  CHECK(kept.truncated());
  CHECK(kept.stream_bytes(Stream::out) == "1234");
  CHECK(kept.stream_bytes(Stream::err) == "5");
  CHECK(kept.lost(Stream::err));
  CHECK(kept.lost(Stream::out));
  CapturedOutput roomy = all.head(100);
  CHECK_FALSE(roomy.truncated());
  CHECK_FALSE(roomy.lost(Stream::out));
  CHECK_FALSE(roomy.lost(Stream::err));
}

TEST_CASE("output: filling the cap exactly is not truncation", "[output]") {
  CapturedOutput out(5);
  out.append(Stream::out, "12345");
  CHECK_FALSE(out.truncated());
  out.append(Stream::out, "");
  CHECK_FALSE(out.truncated());
  out.append(Stream::err, "x");
  CHECK(out.truncated());
  CHECK(out.chunks().size() == 1);
  CHECK(out.stored_bytes() == 5);
}

TEST_CASE("output: a zero cap stores nothing", "[output]") {
  CapturedOutput out(0);
  out.append(Stream::out, "");
  CHECK_FALSE(out.truncated());
  out.append(Stream::out, "x");
  CHECK(out.truncated());
  CHECK(out.chunks().empty());
  CHECK(out.stored_bytes() == 0);
  // Nothing kept, but the mark says stdout lost bytes.
  CHECK(out.encode() == nul_bytes("\x01\x01\0\0\0\0", 6));
  CHECK(out.take_encoded() == nul_bytes("\x01\x01\0\0\0\0", 6));
  auto decoded = CapturedOutput::decode(nul_bytes("\x01\x01\0\0\0\0", 6));
  REQUIRE(decoded.has_value());
  CHECK(decoded->truncated());
  CHECK(decoded->lost(Stream::out));
  CHECK(decoded->chunks().empty());
}

TEST_CASE("output: encoding is the documented format", "[output]") {
  CapturedOutput out;
  out.append(Stream::out, "hi");
  out.append(Stream::err, nul_bytes("\0", 1));
  std::string expected = nul_bytes(
      "\x01"
      "\x01\x02\x00\x00\x00"
      "hi"
      "\x02\x01\x00\x00\x00"
      "\x00",
      1 + 5 + 2 + 5 + 1);
  CHECK(out.encode() == expected);
  CHECK(CapturedOutput().encode() == "");
}

TEST_CASE("output: encode/decode round trip, NUL bytes and no final newline", "[output]") {
  CapturedOutput out;
  std::string binary;
  for (int c = 0; c < 256; ++c) binary.push_back(char(c));
  out.append(Stream::out, nul_bytes("a\0b\0", 4));
  out.append(Stream::err, nul_bytes("\0err\0", 5));
  out.append(Stream::out, binary);
  out.append(Stream::err, "no newline");
  std::string big(300000, 'z');  // a chunk longer than 16 bits of length
  out.append(Stream::out, big);

  auto decoded = CapturedOutput::decode(out.encode());
  REQUIRE(decoded.has_value());
  CHECK_FALSE(decoded->truncated());
  REQUIRE(decoded->chunks().size() == out.chunks().size());
  for (size_t i = 0; i < out.chunks().size(); ++i) {
    CHECK(decoded->chunks()[i].stream == out.chunks()[i].stream);
    CHECK(decoded->chunks()[i].bytes == out.chunks()[i].bytes);
  }
  CHECK(decoded->stream_bytes(Stream::out) == nul_bytes("a\0b\0", 4) + binary + big);
  CHECK(decoded->stream_bytes(Stream::err) == nul_bytes("\0err\0", 5) + "no newline");
  CHECK(decoded->stored_bytes() == out.stored_bytes());
  CHECK(decoded->encode() == out.encode());
}

TEST_CASE("output: the empty blob is an empty capture", "[output]") {
  auto decoded = CapturedOutput::decode("");
  REQUIRE(decoded.has_value());
  CHECK(decoded->chunks().empty());
  CHECK(decoded->stored_bytes() == 0);
  CHECK_FALSE(decoded->truncated());
  auto flagged = CapturedOutput::decode("", true);
  REQUIRE(flagged.has_value());
  CHECK(flagged->truncated());
}

TEST_CASE("output: decode refuses garbage", "[output]") {
  CHECK_FALSE(CapturedOutput::decode("hello").has_value());               // no version byte
  CHECK_FALSE(CapturedOutput::decode(nul_bytes("\x02", 1)).has_value());  // unknown version
  CHECK_FALSE(CapturedOutput::decode(nul_bytes("\x00", 1)).has_value());
  // Unknown stream byte.
  CHECK_FALSE(CapturedOutput::decode(nul_bytes("\x01\x03\x01\x00\x00\x00x", 7)).has_value());
  CHECK_FALSE(CapturedOutput::decode(nul_bytes("\x01\x00\x01\x00\x00\x00x", 7)).has_value());
  // Length past the end of the blob.
  CHECK_FALSE(CapturedOutput::decode(nul_bytes("\x01\x01\x02\x00\x00\x00x", 7)).has_value());
  CHECK_FALSE(CapturedOutput::decode(nul_bytes("\x01\x01\xff\xff\xff\xffx", 7)).has_value());
  // Trailing bytes too short for a chunk header.
  CHECK_FALSE(CapturedOutput::decode(nul_bytes("\x01\x01\x01\x00\x00\x00x\x01", 8)).has_value());
}

TEST_CASE("output: chunks_of views the chunks in place, and refuses what decode refuses",
          "[output]") {
  CapturedOutput out;
  out.append(Stream::out, nul_bytes("a\0b", 3));
  out.append(Stream::err, "e");
  out.append(Stream::out, "no newline");
  const std::string blob = out.encode();
  auto views = CapturedOutput::chunks_of(blob);
  REQUIRE(views);
  REQUIRE(views->size() == 3);
  for (size_t i = 0; i < views->size(); ++i) {
    CHECK((*views)[i].stream == out.chunks()[i].stream);
    CHECK((*views)[i].bytes == out.chunks()[i].bytes);
    // Inside the blob itself: nothing copied.
    CHECK((*views)[i].bytes.data() >= blob.data());
    CHECK((*views)[i].bytes.data() + (*views)[i].bytes.size() <= blob.data() + blob.size());
  }
  CHECK(CapturedOutput::chunks_of("")->empty());
  for (size_t len = 1; len < blob.size(); ++len)
    CHECK(CapturedOutput::chunks_of(std::string_view(blob).substr(0, len)).has_value() ==
          CapturedOutput::decode(std::string_view(blob).substr(0, len)).has_value());
  CHECK_FALSE(CapturedOutput::chunks_of("hello"));
  CHECK_FALSE(CapturedOutput::chunks_of(nul_bytes("\x01\x03\x01\x00\x00\x00x", 7)));
}

TEST_CASE("output: every prefix of a valid blob decodes to whole chunks or is refused",
          "[output]") {
  CapturedOutput out;
  out.append(Stream::out, "first line\n");
  out.append(Stream::err, nul_bytes("warn\0", 5));
  out.append(Stream::out, "x");
  out.append(Stream::err, "");
  out.append(Stream::err, "last, no newline");
  std::string blob = out.encode();
  std::vector<size_t> ends = chunk_ends(out);
  REQUIRE(ends.back() == blob.size());

  for (size_t len = 0; len <= blob.size(); ++len) {
    INFO("prefix of " << len << " bytes");
    auto decoded = CapturedOutput::decode(std::string_view(blob).substr(0, len));
    size_t whole = 0;  // how many chunks end exactly at `len`
    bool at_boundary = len == 0;
    for (size_t i = 0; i < ends.size(); ++i)
      if (ends[i] == len) at_boundary = true, whole = i;
    if (!at_boundary) {
      CHECK_FALSE(decoded.has_value());
      continue;
    }
    REQUIRE(decoded.has_value());
    REQUIRE(decoded->chunks().size() == whole);
    for (size_t i = 0; i < whole; ++i) CHECK(decoded->chunks()[i].bytes == out.chunks()[i].bytes);
  }
}

TEST_CASE("output: random and mutated blobs never crash decode; what decodes re-encodes",
          "[output]") {
  std::mt19937 rng(20260921);
  int decoded_nonempty = 0;
  for (int round = 0; round < 20000; ++round) {
    std::string blob;
    if (round % 2 == 0) {
      // Pure noise.
      size_t len = rng() % 40;
      for (size_t i = 0; i < len; ++i) blob.push_back(char(rng() & 0xff));
      if (!blob.empty() && (rng() & 1)) blob[0] = '\x01';
    } else {
      // A valid capture, then a few random edits: flipped bytes, a cut, junk appended.
      CapturedOutput out;
      int chunks = int(rng() % 5);
      for (int c = 0; c < chunks; ++c) {
        std::string bytes;
        size_t len = rng() % 8;
        for (size_t i = 0; i < len; ++i) bytes.push_back(char(rng() & 0xff));
        out.append((rng() & 1) ? Stream::out : Stream::err, bytes);
      }
      blob = out.encode();
      int edits = int(rng() % 3);
      for (int e = 0; e < edits && !blob.empty(); ++e) {
        switch (rng() % 3) {
          case 0:
            blob[rng() % blob.size()] = char(rng() & 0xff);
            break;
          case 1:
            blob.resize(rng() % blob.size());
            break;
          default:
            blob.push_back(char(rng() % 3));
            break;
        }
      }
    }
    auto decoded = CapturedOutput::decode(blob);
    if (!decoded) continue;
    int64_t total = 0;
    for (const auto& chunk : decoded->chunks()) {
      CHECK((chunk.stream == Stream::out || chunk.stream == Stream::err));
      total += int64_t(chunk.bytes.size());
    }
    CHECK(decoded->stored_bytes() == total);
    if (blob.size() > 1) {
      ++decoded_nonempty;
      // Marks (empty frames) are written at the end, once per stream: the blob comes back as
      // it was when it had none, and the re-encoding is stable either way.
      const std::string again = decoded->encode();
      if (!decoded->truncated()) CHECK(again == blob);
      auto redecoded = CapturedOutput::decode(again);
      REQUIRE(redecoded.has_value());
      CHECK(redecoded->encode() == again);
      CHECK(redecoded->lost(Stream::out) == decoded->lost(Stream::out));
      CHECK(redecoded->lost(Stream::err) == decoded->lost(Stream::err));
    }
  }
  CHECK(decoded_nonempty > 1000);  // the generator does reach the valid paths
}

TEST_CASE("output: framing counts against the encoded maximum, so the blob always fits",
          "[output]") {
  // Alternating one-byte writes cost 6 bytes each once encoded: a byte cap alone would let the
  // blob grow to six times the cap. The last 10 bytes are kept for the two streams' marks.
  CapturedOutput out(INT64_MAX, 1 + 6 * 10 + 10);
  for (int i = 0; i < 20; ++i) out.append(i % 2 ? Stream::err : Stream::out, "x");
  CHECK(out.truncated());
  CHECK(out.stored_bytes() == 10);
  CHECK(out.encode().size() == 71);
  // Within one frame the whole remaining room is payload.
  CapturedOutput one(INT64_MAX, 1 + 5 + 100 + 10);
  one.append(Stream::out, std::string(60, 'a'));
  one.append(Stream::out, std::string(60, 'b'));
  CHECK(one.stored_bytes() == 100);
  CHECK(one.encode().size() == 111);
  CHECK(one.truncated());
  // A new frame that would leave no room for payload is not started.
  CapturedOutput tight(INT64_MAX, 1 + 5 + 3 + 5 + 10);
  tight.append(Stream::out, "abc");
  tight.append(Stream::err, "d");
  CHECK(tight.chunks().size() == 1);
  CHECK(tight.truncated());
  // The default maximum is the store's.
  CapturedOutput defaults;
  defaults.append(Stream::out, "x");
  CHECK_FALSE(defaults.truncated());
}

TEST_CASE("output: --max-output is refused above what the store can keep", "[output]") {
  using idem::core::k_max_output_cap;
  using idem::core::output_cap_arg;
  CHECK(output_cap_arg("--max-output", "16MiB") == 16 * 1024 * 1024);
  CHECK(output_cap_arg("--max-output", "900MiB") == k_max_output_cap);
  CHECK(output_cap_arg("--max-output", "0") == 0);
  for (const char* too_big : {"901MiB", "1G", "4G", "1000000000", "943718401"}) {
    INFO(too_big);
    CHECK_THROWS_AS(output_cap_arg("--max-output", too_big), idem::UsageError);
  }
  try {
    output_cap_arg("--max-output", "1G");
    FAIL("1G accepted");
  } catch (const idem::UsageError& e) {
    CHECK(std::string(e.what()) ==
          "--max-output 1G is more than the store can keep: at most 900MiB (943718400 bytes)");
    CHECK(e.code() == idem::k_exit_usage);
  }
  CHECK_THROWS_AS(output_cap_arg("--max-output", "lots"), idem::UsageError);
  // The cap plus the worst framing of a normal capture stays under the encoded maximum.
  CHECK(k_max_output_cap < idem::core::k_max_encoded_output);
}

TEST_CASE("take_encoded: the bytes of encode(), the capture left empty", "[output]") {
  for (int chunks : {0, 1, 2, 5}) {
    idem::core::CapturedOutput out(1000);
    for (int i = 0; i < chunks; ++i)
      out.append(i % 2 == 0 ? idem::core::Stream::out : idem::core::Stream::err,
                 std::string(size_t(100 + i), char('a' + i)));
    const std::string expected = out.encode();
    const bool truncated = out.truncated();
    CHECK(out.take_encoded() == expected);
    CHECK(out.chunks().empty());
    CHECK(out.truncated() == truncated);
    auto back = idem::core::CapturedOutput::decode(expected);
    REQUIRE(back);
    CHECK(back->encode() == expected);
  }
  // At its cap: still one blob of the same bytes.
  idem::core::CapturedOutput capped(64);
  capped.append(idem::core::Stream::out, std::string(100, 'x'));
  const std::string expected = capped.encode();
  CHECK(capped.take_encoded() == expected);
}

TEST_CASE("take_encoded: interleaved streams at the cap are appended to the first chunk in place",
          "[output]") {
  // The first chunk grew to what the cap lets it hold (the pipe's 64 KiB reads), with room for
  // the other chunks' frame headers: the blob is that chunk's buffer, not a copy of it.
  using idem::core::Stream;
  idem::core::CapturedOutput out(1 << 20);
  const std::string piece(64 * 1024, 'o');
  for (int i = 0; i < 10; ++i) out.append(Stream::out, piece);
  for (int i = 0; i < 20; ++i) {
    out.append(Stream::err, "warning\n");
    out.append(Stream::out, std::string(10000, char('a' + i)));
  }
  for (int i = 0; i < 10; ++i) out.append(Stream::out, piece);  // past the cap
  REQUIRE(out.truncated());
  REQUIRE(out.stored_bytes() == 1 << 20);
  const std::string expected = out.encode();
  const char* first = out.chunks()[0].bytes.data();
  const std::string blob = out.take_encoded();
  CHECK(blob == expected);
  CHECK(blob.data() == first);
}

TEST_CASE("output: growing to its cap, a capture never moves more than half the cap", "[output]") {
  // A move holds the old buffer and its copy at once: from at most half the cap it costs no
  // more than the cap, whatever sizes the pipe's reads come in.
  using idem::core::Stream;
  constexpr int64_t k_cap = 1 << 20;
  std::mt19937 rng(20261201);
  for (int round = 0; round < 50; ++round) {
    idem::core::CapturedOutput out(k_cap);
    size_t capacity = 0;
    while (!out.truncated()) {
      const size_t before = out.chunks().empty() ? 0 : out.chunks()[0].bytes.size();
      out.append(Stream::out, std::string(1 + rng() % 65536, 'x'));
      const size_t now = out.chunks()[0].bytes.capacity();
      if (now != capacity) CHECK(before <= size_t(k_cap / 2));
      capacity = now;
    }
    CHECK(out.stored_bytes() == k_cap);
  }
}

TEST_CASE("output: head keeps what a capture with that cap would have kept", "[output]") {
  CapturedOutput whole;
  whole.append(Stream::out, "abc");
  whole.append(Stream::err, "de");
  whole.append(Stream::out, "fgh");
  for (int64_t cap = 0; cap <= 9; ++cap) {
    CapturedOutput capped(cap);
    for (const auto& chunk : whole.chunks()) capped.append(chunk.stream, chunk.bytes);
    CapturedOutput head = whole.head(cap);
    CHECK(head.encode() == capped.encode());
    CHECK(head.truncated() == (cap < 8));
    CHECK(head.stored_bytes() == std::min<int64_t>(cap, 8));
  }
  CHECK(whole.head(INT64_MAX).encode() == whole.encode());
  CHECK(whole.stored_bytes() == 8);  // left as it was
  // A capture truncated already stays so in every head.
  CapturedOutput cut(2);
  cut.append(Stream::out, "xyz");
  CHECK(cut.head(100).truncated());
  CHECK(cut.head(100).stream_bytes(Stream::out) == "xy");
}

}  // namespace unit_output
