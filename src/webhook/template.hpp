#pragma once
// The `--template` expansion of a webhook hooks file: the subset of Go's text/template that such
// files use, with webhook's functions. Pure: the environment and files come through lookups.
//
//   {{ getenv "NAME" }}       the variable's value; unset: "" (as Go's), and listed in `unset`
//   {{ cat "PATH" }}          the file's content without one trailing newline; unreadable: ""
//   {{ credential "NAME" }}   the file NAME in $CREDENTIALS_DIRECTORY (systemd's LoadCredential);
//                             without that variable, getenv NAME (as webhook does)
//   {{ X | js }}, html, urlquery, print: Go's escapers and print, in pipelines of any length
//   {{- X -}}                 trims the blanks before / after the action
//   {{/* comment */}}         nothing
// Arguments are string literals, "double-quoted" with Go's escapes or `raw`. Anything else (other
// actions, variables, fields, unknown functions) is an error naming its line.
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "webhook/file.hpp"

namespace idem::webhook {

struct TemplateOutput {
  std::string text;
  // Every variable getenv read (credential's fallback included), once each in the order first
  // read: none of them may reach a handler's environment.
  std::vector<std::string> read_env;
  // Those of read_env that were unset (each expanded to ""), and the paths cat or credential
  // could not read (each expanded to ""): worth a warning, not an error, as in webhook.
  std::vector<std::string> unset_env;
  std::vector<std::string> unreadable_files;
};

// A template that cannot be expanded: what() is one line, "line N: what is wrong".
class TemplateError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

TemplateOutput expand_template(std::string_view text, const front::EnvLookup& env,
                               const FileLookup& read_file);

}  // namespace idem::webhook
