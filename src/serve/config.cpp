#include "serve/config.hpp"

#include <nlohmann/json.hpp>
#include <string_view>

#include "front/config_fields.hpp"
#include "proxy/config.hpp"

namespace idem::serve {

namespace {

using namespace front::config_fields;

// A member of the top level. Each is optional, but together they must configure at least one
// route (require_a_route). The ledger API is to be a section beside "hooks" and "proxy".
struct Section {
  std::string_view name;
  void (*read)(const Json& value, const front::EnvLookup& env, Config& config);
  // How many routes the section configured; null: a section of settings, which configures none.
  size_t (*routes)(const Config& config);
  std::string_view when_empty;  // what to say when it is there but configures none
};

const Section k_sections[] = {
    {"hooks",
     [](const Json& value, const front::EnvLookup& env, Config& config) {
       config.hooks = hooks::read_hooks_section(value, env);
     },
     [](const Config& c) { return c.hooks.size(); }, "is empty; list at least one hook"},
    {"proxy",
     [](const Json& value, const front::EnvLookup&, Config& config) {
       config.proxy = proxy::read_proxy_section(value);
     },
     [](const Config& c) { return size_t(c.proxy ? 1 : 0); }, ""},
    {"notifications",
     [](const Json& value, const front::EnvLookup&, Config& config) {
       config.notifications = read_notify_limits(value, "notifications");
     },
     nullptr, ""},
    {"schedules",
     [](const Json& value, const front::EnvLookup&, Config& config) {
       expect_object(value, "schedules");
       check_fields(value, "schedules", {"notify"});
       if (const Json* notify = optional_field(value, "notify"))
         config.schedule_notify = read_notify(*notify, member("schedules", "notify"));
     },
     nullptr, ""},
};

// A config that would serve nothing is refused: at the first section present (each of them
// configures nothing), or, when there is none, by naming the sections that could be added.
void require_a_route(const Json& doc, const Config& config) {
  for (const Section& section : k_sections)
    if (section.routes && section.routes(config) > 0) return;
  for (const Section& section : k_sections)
    if (section.routes && doc.contains(section.name))
      fail(std::string(section.name), std::string(section.when_empty));
  std::string names;
  for (const Section& section : k_sections)
    if (section.routes) names += (names.empty() ? "" : " or ") + quote(section.name);
  fail("", "missing field " + names);
}

Config read_config(const Json& doc, const front::EnvLookup& env) {
  if (!doc.is_object()) wrong_type("", "an object with a \"hooks\" array at the top level", doc);
  std::vector<std::string_view> names;
  for (const Section& section : k_sections) names.push_back(section.name);
  check_fields(doc, "", names);
  Config config;
  for (const Section& section : k_sections)
    if (const Json* value = optional_field(doc, std::string(section.name)))
      section.read(*value, env, config);
  require_a_route(doc, config);
  return config;
}

}  // namespace

Config parse_config(const std::string& file_name, const std::string& text,
                    const front::EnvLookup& env) {
  try {
    return read_config(front::config_fields::parse_json(text), env);
  } catch (const front::config_fields::Problem& p) {
    throw front::ConfigError(file_name + ": " + (p.at.empty() ? "" : p.at + ": ") + p.what);
  }
}

}  // namespace idem::serve
