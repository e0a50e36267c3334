// multipart/form-data bodies (webhook/multipart.hpp) and what a webhook hook makes of them
// (webhook/request.hpp). The expected values are what webhook 2.8.0 (Debian's, built with Go
// 1.19) answered for the same bodies, passed back as its entire-payload.
#include <catch2/catch.hpp>
#include <string>
#include <utility>
#include <vector>

#include "webhook/multipart.hpp"
#include "webhook/payload.hpp"
#include "webhook/request.hpp"

// The cases and helpers of this file, apart from every other unit file's (unity builds).
namespace unit_multipart {

using idem::webhook::multipart::Form;
using idem::webhook::multipart::form_boundary;
using idem::webhook::multipart::k_max_parts;
using idem::webhook::multipart::MediaType;
using idem::webhook::multipart::parse_form;
using idem::webhook::multipart::parse_media_type;
using idem::webhook::multipart::Part;

namespace {

// "name=body" of each part, or "error" when the form is refused.
std::string parts(std::string_view body, std::string_view boundary = "XB") {
  Form form = parse_form(body, boundary);
  if (!form.error.empty()) return "error";
  std::string out;
  for (const Part& part : form.parts) {
    if (!out.empty()) out += " ";
    out += part.name + (part.filename.empty() ? "" : "(" + part.filename + ")") + "=" + part.body;
  }
  return out;
}

std::string field(std::string_view disposition) {
  return "--XB\r\nContent-Disposition: " + std::string(disposition) + "\r\n\r\nv\r\n--XB--";
}

}  // namespace

TEST_CASE("multipart: media types as Go's mime.ParseMediaType reads them", "[multipart]") {
  MediaType t = parse_media_type(R"(Multipart/Form-Data; Boundary="a b\"c";charset=utf-8 ;)");
  CHECK(t.error.empty());
  CHECK(t.type == "multipart/form-data");
  CHECK(t.params["boundary"] == "a b\"c");
  CHECK(t.params["charset"] == "utf-8");
  CHECK(parse_media_type("form-data; name=a; name=a").params["name"] == "a");
  CHECK(!parse_media_type("form-data; name=a; name=b").error.empty());
  CHECK(!parse_media_type("form-data; name=\"a\" junk").error.empty());
  CHECK(!parse_media_type("form-data; name=\"unclosed").error.empty());
  CHECK(!parse_media_type("").error.empty());
  CHECK(!parse_media_type("a/b/c").error.empty());
  CHECK(!parse_media_type("a/").error.empty());
  // RFC 2231: charset'language'percent-encoding, and continuations, over the plain name.
  CHECK(parse_media_type("form-data; name*=UTF-8''caf%C3%A9").params["name"] == "caf\xc3\xa9");
  CHECK(parse_media_type("form-data; name*0=a; name*1*=%62; name=zz").params["name"] == "ab");
  CHECK(parse_media_type("form-data; name*=latin1''x; name=zz").params["name"] == "zz");
  // MSIE's unescaped backslashes: a backslash escapes only a tspecial.
  CHECK(parse_media_type(R"(form-data; filename="C:\dev\a.txt")").params["filename"] ==
        R"(C:\dev\a.txt)");
}

TEST_CASE("multipart: the boundary of a Content-Type header", "[multipart]") {
  CHECK(form_boundary("multipart/form-data; boundary=XB").value ==
        std::optional<std::string>("XB"));
  CHECK(form_boundary("multipart/form-data; boundary=\"X B\"").value ==
        std::optional<std::string>("X B"));
  CHECK(!form_boundary("multipart/form-data; charset=utf-8").value);
  CHECK(!form_boundary("multipart/form-data; boundary=\"\"").value);
  CHECK(!form_boundary("multipart/mixed; boundary=XB").value);
  CHECK(!form_boundary("").value);
  CHECK(!form_boundary("multipart/form-data; boundary=XB; boundary=YB").value);
}

TEST_CASE("multipart: parts, preamble and epilogue", "[multipart]") {
  CHECK(parts("preamble\r\n--XB\r\nContent-Disposition: form-data; name=\"a\"\r\n\r\nhello\r\n"
              "--XB\r\ncontent-disposition: FORM-DATA; NAME=b\r\n\r\nwor\r\nld\r\n--XB--\r\n"
              "epilogue --XB\r\n") == "a=hello b=wor\r\nld");
  // The close delimiter may end the body without a line end, and take spaces and tabs.
  CHECK(parts("--XB \t\r\nContent-Disposition: form-data; name=a\r\n\r\nv\r\n--XB-- \r\n") ==
        "a=v");
  CHECK(parts("--XB--") == "");
  CHECK(parts("--XB--\r\n") == "");
  // A file part, a part without a name (kept, with an empty name), an empty part.
  CHECK(
      parts("--XB\r\nContent-Disposition: form-data; name=f; filename=\"a.json\"\r\n"
            "Content-Type: application/json\r\n\r\n{}\r\n--XB\r\nContent-Disposition: "
            "form-data\r\n\r\nx\r\n--XB\r\nContent-Disposition: form-data; name=e\r\n\r\n--XB--") ==
      "f(a.json)={} =x e=");
  // A delimiter that is only a prefix of a longer line is data.
  CHECK(parts("--XB\r\nContent-Disposition: form-data; name=a\r\n\r\nx\r\n--XBY\r\n--XB-y\r\n"
              "--XB--") == "a=x\r\n--XBY\r\n--XB-y");
  // Lines ending in LF alone when the first delimiter line does.
  CHECK(parts("--XB\nContent-Disposition: form-data; name=a\n\nv\n--XB--\n") == "a=v");
  // Folded header lines, a quoted boundary with a space.
  CHECK(parts("--X B\r\nContent-Disposition: form-data;\r\n  name=a\r\n\r\nv\r\n--X B--", "X B") ==
        "a=v");
  // A body that ends within a part's headers ends the form there, as Go's reader does.
  CHECK(parts("--XB\r\nContent-Disposition: form-data; name=a\r\n\r\nv\r\n--XB\r\n"
              "Content-Disposition: form-data; name=b") == "a=v");
  CHECK(parts("--XB\r\nContent-Disposition: form-data; name=a\r\n\r\nv\r\n--XB\r\n") == "a=v");
}

TEST_CASE("multipart: header fields", "[multipart]") {
  Form form = parse_form(
      "--XB\r\ncontent-type: text/plain\r\nContent-Type: application/json\r\n"
      "X-Odd Name: 1\r\nContent-Disposition: form-data; name=a\r\n\r\nv\r\n--XB--",
      "XB");
  REQUIRE(form.error.empty());
  REQUIRE(form.parts.size() == 1);
  const Part& part = form.parts[0];
  CHECK(*part.header("Content-Type") == "text/plain");
  CHECK(part.headers[1] ==
        std::make_pair(std::string("Content-Type"), std::string("application/json")));
  CHECK(part.headers[2].first == "X-Odd Name");  // not a token: not canonicalized
  CHECK(part.header("X-Missing") == nullptr);
  // No name without form-data, or with a disposition that does not parse.
  CHECK(parts(field("attachment; name=a")) == "=v");
  CHECK(parts(field("form-data; name=a; name=b")) == "=v");
  CHECK(parts("--XB\r\nContent-Disposition : form-data; name=a\r\n\r\nv\r\n--XB--") == "=v");
}

TEST_CASE("multipart: quoted-printable parts are decoded", "[multipart]") {
  auto qp = [](std::string_view body) {
    return parts(
        "--XB\r\nContent-Disposition: form-data; name=a\r\n"
        "Content-Transfer-Encoding: Quoted-Printable\r\n\r\n" +
        std::string(body) + "\r\n--XB--");
  };
  CHECK(qp("h=C3=A9llo=\r\nx") == "a=h\xc3\xa9llox");
  CHECK(qp("a=4a") == "a=aJ");
  CHECK(qp("a=G1 =4") == "a=a=G1 =4");
  CHECK(qp("a  \r\nb\t") == "a=a\r\nb");
  CHECK(qp("abc=") == "a=abc");
  CHECK(qp("=") == "error");
  CHECK(qp("abc= ") == "error");
  CHECK(qp("a\x01") == "error");
  CHECK(qp("a=\rb") == "error");
  Form form =
      parse_form("--XB\r\nContent-Transfer-Encoding: quoted-printable\r\n\r\nv\r\n--XB--", "XB");
  REQUIRE(form.parts.size() == 1);
  CHECK(form.parts[0].header("Content-Transfer-Encoding") == nullptr);  // Go hides it
}

TEST_CASE("multipart: malformed bodies are refused", "[multipart]") {
  CHECK(parts("") == "error");
  CHECK(parts("no delimiter at all") == "error");
  CHECK(parts("--XB\r\nContent-Disposition: form-data; name=a\r\n\r\nv") == "error");
  CHECK(parts("--XB\r\nContent-Disposition: form-data; name=a\r\n\r\nv\r\n") == "error");
  CHECK(parts("--XB\r\nContent-Disposition: form-data; name=a\r\n\r\nv\r\n--XB-") == "error");
  CHECK(parts("--XB\r\nContent-Disposition: form-data; name=a\r\n\r\nv\r\n--XB--junk") == "error");
  CHECK(parts("--XB\r\nnocolon\r\n\r\nv\r\n--XB--") == "error");
  CHECK(parts("--XB\r\n Content-Disposition: form-data; name=a\r\n\r\nv\r\n--XB--") == "error");
  // LF lines after a CRLF start; the close delimiter in LF before a CRLF one.
  CHECK(parts("--XB\nContent-Disposition: form-data; name=a\n\nv\r\n--XB\r\nx\n--XB--") == "error");
  CHECK(parts("--XB--\n") == "error");
  // A line NextPart reads must fit Go's 4096-byte buffer.
  CHECK(parts(std::string(4094, 'x') + "\r\n--XB--") == "");
  CHECK(parts(std::string(4095, 'x') + "\r\n--XB--") == "error");
  CHECK(parts(std::string(5000, 'x')) == "error");
}

TEST_CASE("multipart: at most 1000 parts", "[multipart]") {
  auto many = [](size_t n) {
    std::string body;
    for (size_t i = 0; i < n; ++i)
      body +=
          "--XB\r\nContent-Disposition: form-data; name=n" + std::to_string(i) + "\r\n\r\nv\r\n";
    return body + "--XB--";
  };
  CHECK(parse_form(many(k_max_parts), "XB").parts.size() == k_max_parts);
  CHECK(parse_form(many(k_max_parts + 1), "XB").error == "multipart: message too large");
  // At most 10000 header fields in a part, and in all file parts together.
  auto headers = [](std::string name, size_t n, std::string filename = "") {
    std::string part = "--XB\r\nContent-Disposition: form-data; name=" + name +
                       (filename.empty() ? "" : "; filename=" + filename) + "\r\n";
    for (size_t i = 0; i < n; ++i) part += "X-H: 1\r\n";
    return part + "\r\nv\r\n";
  };
  CHECK(parse_form(headers("a", 9999) + "--XB--", "XB").error.empty());
  CHECK(parse_form(headers("a", 10000) + "--XB--", "XB").error == "multipart: message too large");
  CHECK(parse_form(headers("f", 4998, "f") + headers("g", 4998, "g") + headers("h", 0) + "--XB--",
                   "XB")
            .error.empty());
  CHECK(!parse_form(headers("f", 4999, "f") + headers("g", 4999, "g") + headers("h", 0) + "--XB--",
                    "XB")
             .error.empty());
  CHECK(parse_form(headers("a", 9000) + headers("b", 9000) + "--XB--", "XB").error.empty());
  // Values beyond max_memory + 10 MiB are too much; files beyond max_memory are not.
  std::string big(100, 'x');
  std::string value = "--XB\r\nContent-Disposition: form-data; name=a\r\n\r\n" + big + "\r\n--XB--";
  std::string file =
      "--XB\r\nContent-Disposition: form-data; name=a; filename=f\r\n\r\n" + big + "\r\n--XB--";
  CHECK(parse_form(value, "XB", 0).error.empty());
  CHECK(parse_form(file, "XB", 0).error.empty());
  // ReadForm's budget: 1 MiB + 10 MiB, less 200 bytes and the name for each named part.
  auto named = [](std::string name, size_t size, std::string filename = "") {
    return "--XB\r\nContent-Disposition: form-data; name=" + name +
           (filename.empty() ? "" : "; filename=" + filename) + "\r\n\r\n" +
           std::string(size, 'v') + "\r\n";
  };
  const size_t budget = (size_t(11) << 20) - 201;
  CHECK(parse_form(named("a", budget) + "--XB--", "XB").error.empty());
  CHECK(!parse_form(named("a", budget + 1) + "--XB--", "XB").error.empty());
  // An in-memory file may overdraw it; only a named part after it is refused.
  std::string overdrawn = named("a", size_t(21) << 19) + named("f", size_t(3) << 18, "f");
  CHECK(parse_form(overdrawn + "--XB--", "XB").error.empty());
  CHECK(parse_form(overdrawn + named("b", 0) + "--XB--", "XB").error ==
        "multipart: message too large");
  // A file over max_memory would go to disk: it costs only its metadata.
  CHECK(parse_form(named("f", size_t(12) << 20, "f") + "--XB--", "XB").error.empty());
}

namespace {

using idem::webhook::Argument;
using idem::webhook::Request;
using idem::webhook::WebhookHook;

Argument payload_arg(std::string name) {
  Argument a;
  a.source = Argument::Source::payload;
  a.name = std::move(name);
  return a;
}

Request form_post(const WebhookHook& hook, std::string body, std::string_view query = "",
                  std::string type = "multipart/form-data; boundary=XB") {
  return make_request(hook, "POST", "192.0.2.10:51234", {{"Content-Type", std::move(type)}}, query,
                      std::move(body), 0);
}

std::string payload_of(const Request& request) {
  return request.form_error.empty() ? idem::webhook::go_json(request.payload) : "500";
}

std::string value(const Request& request, Argument::Source source, std::string name = "") {
  Argument a = payload_arg(std::move(name));
  a.source = source;
  return idem::webhook::value_of(a, request).value_or("(none)");
}

const std::string k_file_head =
    "--XB\r\nContent-Disposition: form-data; name=j; filename=j.txt\r\n";

}  // namespace

TEST_CASE("webhook request: multipart values and JSON file parts", "[multipart][webhook]") {
  WebhookHook hook;
  hook.execute_command = "/bin/true";
  Request r = form_post(hook,
                        "--XB\r\nContent-Disposition: form-data; name=event\r\n\r\nmedia.play\r\n"
                        "--XB\r\nContent-Disposition: form-data; name=event\r\n\r\nsecond\r\n"
                        "--XB\r\nContent-Disposition: form-data; name=\"payload\"; filename=p\r\n"
                        "Content-Type: application/json\r\n\r\n{\"n\": 1.50, \"a\": [1]}\r\n"
                        "--XB\r\nContent-Disposition: form-data; name=thumb; filename=t.jpg\r\n"
                        "Content-Type: image/jpeg\r\n\r\n\xff\xd8\r\n--XB--\r\n");
  CHECK(payload_of(r) == R"({"event":"media.play","payload":{"a":[1],"n":1.50}})");
  CHECK(value(r, Argument::Source::payload, "payload.n") == "1.50");
  CHECK(value(r, Argument::Source::payload, "thumb") == "(none)");
  // webhook never reads a multipart body itself.
  CHECK(r.multipart);
  CHECK(value(r, Argument::Source::raw_request_body) == "");
  CHECK(r.body.find("media.play") != std::string::npos);

  // A file part is decoded when parse-parameters-as-json names it, whatever its type; one that
  // holds no JSON object is a nil map: "null" in the payload and as a value.
  hook.parse_as_json.push_back(payload_arg("j"));
  CHECK(payload_of(form_post(hook, k_file_head + "\r\n{\"k\": 2}\r\n--XB--")) ==
        R"({"j":{"k":2}})");
  Request bad = form_post(hook, k_file_head + "\r\n[1, 2]\r\n--XB--");
  CHECK(payload_of(bad) == R"({"j":null})");
  CHECK(value(bad, Argument::Source::payload, "j") == "null");
  CHECK(value(bad, Argument::Source::payload, "j.k") == "(none)");
  CHECK(!bad.problems.empty());
  CHECK(payload_of(form_post(hook, k_file_head + "\r\n{\"k\":\r\n--XB--")) == R"({"j":null})");
  // Only the first file part of a name counts; a JSON file replaces a value of the same name.
  CHECK(payload_of(form_post(hook, "--XB\r\nContent-Disposition: form-data; name=j\r\n\r\nv\r\n" +
                                       k_file_head + "\r\n{}\r\n--XB--")) == R"({"j":{}})");
  hook.parse_as_json.clear();
  CHECK(payload_of(form_post(hook, k_file_head + "\r\n{}\r\n" + k_file_head +
                                       "Content-Type: application/json\r\n\r\n{}\r\n--XB--")) ==
        "null");
  // Only "application/json" exactly.
  CHECK(payload_of(form_post(hook, k_file_head + "Content-Type: application/json; charset=utf-8"
                                                 "\r\n\r\n{}\r\n--XB--")) == "null");
}

TEST_CASE("webhook request: multipart forms refused or not multipart", "[multipart][webhook]") {
  WebhookHook hook;
  hook.execute_command = "/bin/true";
  CHECK(payload_of(form_post(hook, "")) == "500");
  CHECK(payload_of(form_post(hook, "--XB--")) == "null");  // an empty form: no payload
  CHECK(payload_of(form_post(hook, "--XB--", "", "multipart/form-data; charset=x")) == "500");
  // Go's ParseMultipartForm parses the query too.
  CHECK(payload_of(form_post(hook, "--XB--", "a=%zz")) == "500");
  CHECK(payload_of(form_post(hook, "--XB--", "a=1")) == "null");
  // Not "multipart/form-data;" exactly: not a multipart payload (but "json" anywhere wins, over
  // a body webhook has not read).
  Request upper = form_post(hook, "--XB--", "", "Multipart/Form-Data; boundary=XB");
  CHECK(!upper.multipart);
  CHECK(value(upper, Argument::Source::raw_request_body) == "--XB--");
  Request json = form_post(hook, "--json--", "", "multipart/form-data; boundary=json");
  CHECK(json.multipart);
  CHECK(payload_of(json) == "null");
  // The hook's content type picks the case; the boundary still comes from the header.
  hook.incoming_content_type = "multipart/form-data; boundary=other";
  CHECK(payload_of(form_post(hook, field("form-data; name=a"))) == R"({"a":"v"})");
  CHECK(payload_of(form_post(hook, field("form-data; name=a"), "", "text/plain")) == "500");
}

}  // namespace unit_multipart
