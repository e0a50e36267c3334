// Cron expressions (util/cron.hpp): parse_cron accepts or refuses any text with a one-line
// error, against a reference of what each field may hold; an accepted schedule's bits stay in
// their fields' ranges, and its due instants in UTC match it and agree both ways.
#include <cstdint>
#include <string>
#include <string_view>

#include "fuzz_check.hpp"
#include "util/cron.hpp"
#include "util/time_zone.hpp"

namespace {

bool cron_text_char(char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '*' ||
         c == ',' || c == '-' || c == '/' || c == ' ' || c == '\t' || c == '@' || c == '\n';
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  std::string error;
  auto s = idem::util::parse_cron(text, &error);
  if (!s) {
    FUZZ_CHECK(!error.empty());
    FUZZ_CHECK(error.find('\n') == std::string::npos);
    return 0;
  }
  for (char c : text) FUZZ_CHECK(cron_text_char(c));
  FUZZ_CHECK(s->minutes != 0 && (s->minutes >> 60) == 0);
  FUZZ_CHECK(s->hours != 0 && (s->hours >> 24) == 0);
  FUZZ_CHECK((s->days_of_month & 1u) == 0 && s->days_of_month != 0);
  FUZZ_CHECK((s->months & 1u) == 0 && s->months != 0 && (s->months >> 13) == 0);
  FUZZ_CHECK(s->days_of_week != 0 && (s->days_of_week >> 7) == 0);
  // Parsing its own text again gives the same schedule.
  auto again = idem::util::parse_cron(s->text, &error);
  FUZZ_CHECK(again && again->minutes == s->minutes && again->hours == s->hours &&
             again->days_of_month == s->days_of_month && again->months == s->months &&
             again->days_of_week == s->days_of_week && again->wildcard() == s->wildcard());

  const idem::util::TimeZone utc = idem::util::TimeZone::utc();
  int64_t t = 1772953200 + int64_t(size) * 4099;
  for (int i = 0; i < 20; ++i) {
    auto next = idem::util::next_due(*s, utc, t);
    if (!next) break;
    FUZZ_CHECK(*next > t && *next % 60 == 0);
    FUZZ_CHECK(s->matches_local(*next));
    FUZZ_CHECK(idem::util::previous_due(*s, utc, *next) == next);
    auto before = idem::util::previous_due(*s, utc, *next - 1);
    if (before) {
      FUZZ_CHECK(*before < *next && s->matches_local(*before));
      FUZZ_CHECK(idem::util::next_due(*s, utc, *before) == next);
    }
    t = *next;
  }
  return 0;
}
