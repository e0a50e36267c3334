#pragma once
// The fuzz targets' own reading of well-formed UTF-8, after Unicode's table 3-7 (byte ranges, no
// decoding): a second opinion on key.cpp's decoder and on config_fields.cpp's one-line messages.
#include <cstddef>
#include <cstdint>
#include <string_view>

inline bool well_formed_utf8(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    auto b = uint8_t(s[i]);
    int trail;
    uint8_t lo = 0x80, hi = 0xbf;  // range of the first trailing byte
    if (b <= 0x7f)
      trail = 0;
    else if (b >= 0xc2 && b <= 0xdf)
      trail = 1;
    else if (b == 0xe0)
      trail = 2, lo = 0xa0;
    else if (b == 0xed)
      trail = 2, hi = 0x9f;
    else if (b >= 0xe1 && b <= 0xef)
      trail = 2;
    else if (b == 0xf0)
      trail = 3, lo = 0x90;
    else if (b == 0xf4)
      trail = 3, hi = 0x8f;
    else if (b >= 0xf1 && b <= 0xf3)
      trail = 3;
    else
      return false;
    if (s.size() - i - 1 < size_t(trail)) return false;
    for (int t = 1; t <= trail; ++t) {
      auto c = uint8_t(s[i + size_t(t)]);
      if (c < (t == 1 ? lo : 0x80) || c > (t == 1 ? hi : 0xbf)) return false;
    }
    i += size_t(trail) + 1;
  }
  return true;
}
