#include "core/output.hpp"

#include <algorithm>

namespace idem::core {

namespace {
constexpr char k_format_v1 = 0x01;
}

void CapturedOutput::append(Stream stream, std::string_view bytes) {
  if (bytes.empty()) return;
  int64_t room = cap_ - stored_;
  if (room <= 0) {
    truncated_ = true;
    return;
  }
  if (int64_t(bytes.size()) > room) {
    bytes = bytes.substr(0, size_t(room));
    truncated_ = true;
  }
  if (!chunks_.empty() && chunks_.back().stream == stream)
    chunks_.back().bytes.append(bytes);
  else
    chunks_.push_back(Chunk{stream, std::string(bytes)});
  stored_ += int64_t(bytes.size());
}

std::string CapturedOutput::stream_bytes(Stream stream) const {
  std::string out;
  for (const auto& chunk : chunks_)
    if (chunk.stream == stream) out += chunk.bytes;
  return out;
}

std::string CapturedOutput::encode() const {
  if (chunks_.empty()) return {};
  std::string blob(1, k_format_v1);
  for (const auto& chunk : chunks_) {
    // A frame's length has 32 bits but a merged chunk may be longer (--max-output allows up to
    // 1 TiB): such a chunk is written as several frames of the same stream, which decode in order.
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
  return blob;
}

std::optional<CapturedOutput> CapturedOutput::decode(std::string_view blob, bool truncated) {
  CapturedOutput out;
  out.truncated_ = truncated;
  if (blob.empty()) return out;
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
    out.chunks_.push_back(Chunk{Stream(stream), std::string(blob.substr(pos, n))});
    out.stored_ += n;
    pos += n;
  }
  out.cap_ = std::max<int64_t>(out.stored_, 0);
  return out;
}

}  // namespace idem::core
