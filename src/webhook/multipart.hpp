#pragma once
// multipart/form-data bodies (RFC 7578, RFC 2046 §5.1) as Go's mime/multipart reads them for
// webhook's r.ParseMultipartForm (Go 1.19): the boundary from the Content-Type header as
// mime.ParseMediaType reads it, parts split as multipart.Reader does (a preamble skipped, lines
// ending in CRLF, or in LF when the first delimiter line does, the close delimiter, the epilogue
// ignored), part headers as net/textproto reads them. Pure; the body is already in memory and
// bounded by the hook's max_body, and it is scanned once from left to right.
#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace idem::webhook::multipart {

// Go's mime.ParseMediaType: the type lower-cased, parameters by lower-cased name (quoted or
// not; RFC 2231 continuations and charsets decoded). `error` is set when it does not parse;
// `type` may still be set then (a bad parameter), as Go returns it.
struct MediaType {
  std::string type;
  std::map<std::string, std::string> params;
  std::string error;
};
MediaType parse_media_type(std::string_view value);

// Go's textproto.CanonicalMIMEHeaderKey: "x-hub-signature" is "X-Hub-Signature"; a name holding
// a byte that is no token character (a space before the colon, say) stays as it is.
std::string canonical_mime_key(std::string_view name);

struct Part {
  // The part's header fields in order, names canonical as Go writes them ("Content-Type").
  std::vector<std::pair<std::string, std::string>> headers;
  std::string name;      // Content-Disposition form-data's name; "" when there is none
  std::string filename;  // its filename; "" for a form value
  std::string body;

  // The first value of a header field (by canonical name), or nullptr.
  const std::string* header(std::string_view canonical_name) const;
};

struct Form {
  std::vector<Part> parts;  // every part read, in order, those without a name included
  std::string error;        // Go's error text when the body is refused ("" when it parsed)
};

// Go's limits for ReadForm: more parts than this is "message too large"; so is a form whose
// values (and in-memory files' metadata and contents) exceed max_memory + 10 MiB.
inline constexpr size_t k_max_parts = 1000;
inline constexpr size_t k_default_max_memory = size_t(1) << 20;  // webhook's -max-multipart-mem

// Splits `body` into parts under `boundary`, as multipart.Reader.ReadForm(max_memory).
Form parse_form(std::string_view body, std::string_view boundary,
                size_t max_memory = k_default_max_memory);

// The boundary of a Content-Type header as Go's Request.multipartReader takes it, or an error
// ("request Content-Type isn't multipart/form-data", "no multipart boundary param in
// Content-Type").
struct Boundary {
  std::optional<std::string> value;
  std::string error;
};
Boundary form_boundary(std::string_view content_type);

}  // namespace idem::webhook::multipart
