#pragma once
// The "proxy" section of the daemon's config (contract §7), read into proxy/rules.hpp's
// ProxyConfig.
#include "front/config_fields.hpp"
#include "proxy/rules.hpp"

namespace idem::proxy {

// Throws front::config_fields::Problem.
ProxyConfig read_proxy_section(const front::config_fields::Json& value);

}  // namespace idem::proxy
