// TZif data (util/time_zone.hpp): from_tzif refuses or accepts any bytes without a crash, and a
// zone it accepts answers consistently: offsets within RFC 8536's bounds, segments that hold
// the instant asked about, resolve() inverting offset_at, and a cron walk over its changes
// whose next and previous due instants agree.
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "fuzz_check.hpp"
#include "util/cron.hpp"
#include "util/time_zone.hpp"

namespace {

using idem::util::TimeZone;

void check_instant(const TimeZone& tz, int64_t t) {
  const int64_t offset = tz.offset_at(t);
  FUZZ_CHECK(offset >= -89999 && offset <= 93599);
  const TimeZone::Segment seg = tz.segment_at(t);
  FUZZ_CHECK(seg.start <= t && t < seg.end);
  FUZZ_CHECK(seg.offset == offset);
  const int64_t local = t + offset;
  bool found = false;
  int64_t previous = INT64_MIN;
  for (int64_t u : tz.resolve(local)) {
    FUZZ_CHECK(u > previous);
    previous = u;
    FUZZ_CHECK(u + tz.offset_at(u) == local);
    found = found || u == t;
  }
  FUZZ_CHECK(found);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  std::string error;
  auto tz = TimeZone::from_tzif("fuzz", bytes, &error);
  if (!tz) {
    FUZZ_CHECK(!error.empty());
    FUZZ_CHECK(error.find('\n') == std::string::npos);
    return 0;
  }
  // Instants: fixed ones, and the last 8 bytes of the input as one.
  int64_t tail = 0;
  if (size >= 8) std::memcpy(&tail, data + size - 8, 8);
  tail %= int64_t(1) << 36;
  for (int64_t t : {int64_t(0), int64_t(-2208988800), int64_t(1772953200), int64_t(2200000000),
                    int64_t(10453021200), tail}) {
    check_instant(*tz, t);
  }
  // A fixed-time and a wildcard schedule over a year from the tail instant: each due instant
  // is the previous_due of itself, and next_due of the one before.
  std::string cron_error;
  for (const char* text : {"30 2 * * *", "*/20 * * * *"}) {
    auto schedule = idem::util::parse_cron(text, &cron_error);
    FUZZ_CHECK(schedule);
    int64_t t = tail;
    for (int i = 0; i < 50; ++i) {
      auto next = idem::util::next_due(*schedule, *tz, t);
      if (!next) break;
      FUZZ_CHECK(*next > t);
      FUZZ_CHECK(idem::util::previous_due(*schedule, *tz, *next) == next);
      FUZZ_CHECK(idem::util::next_due(*schedule, *tz, *next - 1) == next);
      t = *next + (*next - t) % 7200;
    }
  }
  return 0;
}
