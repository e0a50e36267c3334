#pragma once
// The page's text forms: HTML escaping (every byte of a record reaches the page through it),
// URL components and forms, cookies, and the constant-time comparison and HMAC of the CSRF token.
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace idem::ui {

// `text` made safe as HTML text and as a quoted attribute value: & < > " ' as references, a byte
// that is not part of valid UTF-8 and a control character other than tab, newline and carriage
// return as U+FFFD, a bidirectional formatting character (U+202E, ...) as the visible text
// "[U+202E]". Never lets markup through, whatever the bytes, nor reorders what follows.
std::string html_escape(std::string_view text);

// Every byte but A-Z a-z 0-9 - . _ ~ as %XX: a query value or path segment.
std::string url_component(std::string_view bytes);

// %XX as the byte (and with `plus_is_space`, '+' as a space); nullopt for a '%' not followed by
// two hex digits.
std::optional<std::string> percent_decode(std::string_view text, bool plus_is_space);

// The name/value pairs of an application/x-www-form-urlencoded text (a query or a form body):
// '+' as a space, %XX as the byte; nullopt for a '%' not followed by two hex digits.
std::optional<std::vector<std::pair<std::string, std::string>>> parse_form(std::string_view text);

// The value of cookie `name` of a Cookie header ("a=b; c=d"); nullopt when absent.
std::optional<std::string> cookie_value(std::string_view header, std::string_view name);

}  // namespace idem::ui
