#pragma once
// The delivery-log page's filters and cursor, read from a query (pure): which records a page
// lists, and where the next page starts.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "core/record.hpp"

namespace idem::ui {

// A position in the newest-first listing: the last record shown (its start, Unix ms, and key).
using UiCursor = std::pair<int64_t, std::string>;

struct UiFilter {
  std::optional<core::Status> status;  // status=running|succeeded|failed|abandoned
  std::string front;   // front=NAME as `idem ls --front` (run, each, begin, hook, ...); empty: any
  std::string hook;    // hook=PATH: a native hook's records ("PATH#...")
  std::string prefix;  // prefix=TEXT: keys starting so (after hook's "PATH#")
  int64_t since_ms = 0;  // since=YYYY-MM-DDTHH:MM[:SS] (UTC): started at or after
  int64_t until_ms = 0;  // until=...: started before
  // result=2xx|3xx|4xx|5xx (the stored HTTP status) or exit0|exit_nonzero (the exit code):
  // core::result_class.
  std::string result;
  std::optional<UiCursor> after;  // after=CURSOR (encode_ui_cursor)

  // The key prefix the store is asked for: hook's records, then prefix.
  std::string key_prefix() const { return hook.empty() ? prefix : hook + "#" + prefix; }
  // The record kind the store is asked for (front's, core::kind_of_front); empty: any.
  std::string kind() const;
};

// The filter of a query's pairs (parse_form); unknown names are ignored, empty values mean
// "any". A value that cannot be read is a one-line message naming the field.
std::variant<UiFilter, std::string> parse_ui_filter(
    const std::vector<std::pair<std::string, std::string>>& pairs);

// The filter as a query ("status=failed&hook=%2Fh"), the cursor only with `with_cursor`.
std::string ui_filter_query(const UiFilter& filter, bool with_cursor);

// A cursor as text for a URL ("1733220000000.6b6579": the start, a dot, the key in hex) and
// back; nullopt for text that is not one.
std::string encode_ui_cursor(const UiCursor& cursor);
std::optional<UiCursor> decode_ui_cursor(std::string_view text);

// "YYYY-MM-DDTHH:MM[:SS]" (UTC, as a datetime-local input sends it) as Unix ms, and back
// ("YYYY-MM-DDTHH:MM:SS"); nullopt for other text.
std::optional<int64_t> parse_ui_time(std::string_view text);
std::string format_ui_time(int64_t ms);

}  // namespace idem::ui
