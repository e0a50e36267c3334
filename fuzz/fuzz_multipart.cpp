// multipart/form-data bodies (webhook/multipart.hpp): whatever the Content-Type header and the
// body, form_boundary and parse_form answer without crashing or throwing; an error is one line and
// leaves no parts; at most k_max_parts parts; a part's name and body come from the input (a
// quoted-printable body only shrinks).
//
// Input layout: the Content-Type header up to the first newline, and the rest is the body.
#include <cstdint>
#include <string>
#include <string_view>

#include "fuzz_check.hpp"
#include "webhook/multipart.hpp"

using namespace idem::webhook::multipart;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view input(reinterpret_cast<const char*>(data), size);
  size_t newline = input.find('\n');
  std::string_view content_type = input.substr(0, newline);
  std::string_view body = newline == std::string_view::npos ? "" : input.substr(newline + 1);
  MediaType type = parse_media_type(content_type);
  if (!type.error.empty()) FUZZ_CHECK(type.params.empty());
  Boundary boundary = form_boundary(content_type);
  FUZZ_CHECK(boundary.value.has_value() == boundary.error.empty());
  // A boundary of the header, else the start of the body's first line, so that the parser gets
  // past the preamble often.
  std::string b = boundary.value    ? *boundary.value
                  : body.size() < 2 ? std::string()
                                    : std::string(body.substr(2, body.find_first_of("\r\n") - 2));
  std::string lowered(body);
  for (char& c : lowered) c = char(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
  const bool quoted_printable = lowered.find("quoted-printable") != std::string::npos;
  Form form = parse_form(body, b, size % 2 ? 64 : k_default_max_memory);
  if (!form.error.empty()) {
    FUZZ_CHECK(form.parts.empty());
    FUZZ_CHECK(form.error.find('\n') == std::string::npos);
  }
  FUZZ_CHECK(form.parts.size() <= k_max_parts);
  size_t total = 0;
  for (const Part& part : form.parts) {
    total += part.body.size();
    FUZZ_CHECK(part.body.size() <= body.size());
    if (!quoted_printable) FUZZ_CHECK(body.find(part.body) != std::string_view::npos);
  }
  FUZZ_CHECK(total <= body.size());
  return 0;
}
