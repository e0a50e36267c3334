// The --template expansion of hooks files (webhook/template.hpp): webhook's functions, Go's
// escapers and trim markers, and one message with its line per unsupported construct.
#include <catch2/catch.hpp>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "webhook/template.hpp"

// The cases and helpers of this file, apart from every other unit file's (unity builds).
namespace unit_webhook_template {

using idem::webhook::expand_template;
using idem::webhook::TemplateError;
using idem::webhook::TemplateOutput;

namespace {

std::map<std::string, std::string> g_env;

std::optional<std::string> fake_env(const std::string& name) {
  auto it = g_env.find(name);
  if (it == g_env.end()) return std::nullopt;
  return it->second;
}

std::optional<std::string> fake_file(const std::string& path) {
  if (path == "/run/secret") return "line one\nline two\n\n";
  if (path == "/creds/api-token") return "tok-123\n";
  if (path == "/empty") return "";
  return std::nullopt;
}

TemplateOutput run(const std::string& text, std::map<std::string, std::string> env = {}) {
  g_env = std::move(env);
  return expand_template(text, fake_env, fake_file);
}

std::string expand(const std::string& text, std::map<std::string, std::string> env = {}) {
  return run(text, std::move(env)).text;
}

std::string error_of(const std::string& text) {
  try {
    run(text);
  } catch (const TemplateError& e) {
    return e.what();
  }
  return "(expanded)";
}

}  // namespace

TEST_CASE("webhook template: text without actions is unchanged", "[webhook_template]") {
  CHECK(expand("").empty());
  CHECK(expand("[{\"id\": \"a\"}]\n") == "[{\"id\": \"a\"}]\n");
  CHECK(expand("a { b } c }} d {") == "a { b } c }} d {");
}

TEST_CASE("webhook template: getenv", "[webhook_template]") {
  TemplateOutput out =
      run(R"(s: {{ getenv "SECRET" }}, t: {{getenv "UNSET"}}, u: {{ getenv "SECRET" }})",
          {{"SECRET", "hunter2"}});
  CHECK(out.text == "s: hunter2, t: , u: hunter2");
  CHECK(out.read_env == std::vector<std::string>{"SECRET", "UNSET"});
  CHECK(out.unset_env == std::vector<std::string>{"UNSET"});
  CHECK(out.unreadable_files.empty());
  // Set but empty is not unset.
  CHECK(run(R"({{ getenv "E" }})", {{"E", ""}}).unset_env.empty());
}

TEST_CASE("webhook template: cat trims one trailing newline, as webhook does",
          "[webhook_template]") {
  CHECK(expand(R"({{ cat "/run/secret" }})") == "line one\nline two\n");
  CHECK(expand(R"({{ cat "/empty" }}.)") == ".");
  TemplateOutput out = run(R"([{{ cat "/nope" }}])");
  CHECK(out.text == "[]");
  CHECK(out.unreadable_files == std::vector<std::string>{"/nope"});
  CHECK(out.read_env.empty());
}

TEST_CASE("webhook template: credential reads systemd's credentials directory",
          "[webhook_template]") {
  TemplateOutput out =
      run(R"({{ credential "api-token" }})", {{"CREDENTIALS_DIRECTORY", "/creds"}});
  CHECK(out.text == "tok-123");
  CHECK(out.unset_env.empty());
  // Without the directory, the variable of that name.
  out = run(R"({{ credential "TOKEN" }})", {{"TOKEN", "from-env"}});
  CHECK(out.text == "from-env");
  CHECK(out.read_env == std::vector<std::string>{"TOKEN"});
  g_env = {{"CREDENTIALS_DIRECTORY", "/creds"}};
  CHECK_THROWS_WITH(expand_template(R"({{ credential "../etc/passwd" }})", fake_env, fake_file),
                    "line 1: credential '../etc/passwd' is not a credential name");
}

TEST_CASE("webhook template: Go's escapers and print", "[webhook_template]") {
  std::map<std::string, std::string> env = {{"V", "a\"b'c\\d<e>f&g=h\ni\x01j\xc2\xa0k\xc3\xa9"}};
  CHECK(expand(R"({{ getenv "V" | js }})", env) ==
        "a\\\"b\\'c\\\\d\\u003Ce\\u003Ef\\u0026g\\u003Dh\\u000Ai\\u0001j\\u00A0k\xc3\xa9");
  CHECK(expand(R"({{ getenv "V" | html }})", env) ==
        "a&#34;b&#39;c\\d&lt;e&gt;f&amp;g=h\ni\x01j\xc2\xa0k\xc3\xa9");
  CHECK(expand(R"({{ "a b&c/d~é" | urlquery }})") == "a+b%26c%2Fd~%C3%A9");
  CHECK(expand(R"({{ print "a" "b" }}{{ print }}{{ "c" | print "d" }})") == "abdc");
  CHECK(expand(R"({{ js "<" ">" }})") == "\\u003C\\u003E");
  // Pipelines of any length, and parenthesised ones as arguments.
  CHECK(expand(R"({{ "<" | html | js }})") == "\\u0026lt;");
  CHECK(expand(R"({{ print (getenv "A") "-" (print "b" | js) }})", {{"A", "x"}}) == "x-b");
}

TEST_CASE("webhook template: string literals", "[webhook_template]") {
  CHECK(expand(R"({{ "tab\there\nnl \"q\" \\ \x41\101\u00e9\U0001F600" }})") ==
        "tab\there\nnl \"q\" \\ AA\xc3\xa9\xf0\x9f\x98\x80");
  CHECK(expand("{{ `raw \\n \"x\" }}\nline` }}") == "raw \\n \"x\" }}\nline");
  CHECK(expand(R"({{ "}}" }})") == "}}");
}

TEST_CASE("webhook template: trim markers and comments", "[webhook_template]") {
  CHECK(expand("a  \n {{- \"b\" -}} \n\t c") == "abc");
  CHECK(expand("a {{ \"b\" -}}   c") == "a bc");
  CHECK(expand("a   {{- \"b\" }} c") == "ab c");
  CHECK(expand("x{{/* a comment, with {{ braces */}}y") == "xy");
  CHECK(expand("x \n{{- /* trimmed */ -}}\n y") == "xy");
  CHECK(expand("[\n{{/* multi\nline */}}\n]") == "[\n\n]");
}

TEST_CASE("webhook template: line numbers count every newline before the action",
          "[webhook_template]") {
  CHECK(error_of("a\nb\n{{/* x\ny */}}\n{{ oops }}") ==
        "line 5: function 'oops' is not supported (use getenv, cat, credential, js, html, "
        "urlquery or print)");
  CHECK(error_of("{{ `a\nb` }}\n{{ nope }}") ==
        "line 3: function 'nope' is not supported (use getenv, cat, credential, js, html, "
        "urlquery or print)");
}

TEST_CASE("webhook template: what is not supported is an error naming its line",
          "[webhook_template]") {
  const std::map<std::string, std::string> cases = {
      {"x\n{{ if \"a\" }}y{{ end }}",
       "line 2: function 'if' is not supported (use getenv, cat, credential, js, html, urlquery "
       "or print)"},
      {"{{ .Secret }}",
       "line 1: '.Secret': data and variables are not supported in hooks templates"},
      {"{{ $x }}", "line 1: '$x': data and variables are not supported in hooks templates"},
      {"{{ 42 }}",
       "line 1: function '42' is not supported (use getenv, cat, credential, js, html, urlquery "
       "or print)"},
      {"{{ }}", "line 1: empty action"},
      {"{{ getenv \"A\" | }}", "line 1: missing command after '|'"},
      {"{{ getenv }}", "line 1: wrong number of arguments for getenv: want 1, got 0"},
      {"{{ getenv \"A\" \"B\" }}", "line 1: wrong number of arguments for getenv: want 1, got 2"},
      {"{{ \"a\" | getenv \"B\" }}", "line 1: wrong number of arguments for getenv: want 1, got 2"},
      {"{{ \"a\" | \"b\" }}", "line 1: a value cannot take a piped argument; pipe into a function"},
      {"{{ \"a\" \"b\" }}", "line 1: unexpected '\"'"},
      {"{{ print (\"a\" }}", "line 1: unclosed '('"},
      {"{{ print \"a\") }}", "line 1: unexpected ')'"},
      {"\n\n{{ getenv \"A\"", "line 3: unclosed action"},
      {"{{ \"abc }}", "line 1: unclosed action"},
      {"{{ \"a\nb\" }}", "line 1: newline in string"},
      {"{{ \"\\q\" }}", "line 1: bad escape in string"},
      {"{{ \"\\xZ1\" }}", "line 1: bad escape in string"},
      {"{{ \"\\400\" }}", "line 1: bad escape in string"},
      {"{{ \"\\uD800\" }}", "line 1: bad escape in string"},
      {"{{/* never closed", "line 1: unclosed comment"},
      {"{{/* c */ \"x\" }}", "line 1: comment ends before closing delimiter"},
  };
  for (const auto& [text, message] : cases) {
    INFO(text);
    CHECK(error_of(text) == message);
  }
}

}  // namespace unit_webhook_template
