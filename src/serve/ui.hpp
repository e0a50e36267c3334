#pragma once
// The delivery-log page's backend (`idem serve --ui`): the store's listing, reads and removes,
// and re-runs through the native hooks' delivery path, for the page's route (ui/route.hpp).
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "front/route.hpp"
#include "hooks/config.hpp"
#include "hooks/delivery.hpp"
#include "serve/services.hpp"

namespace idem::serve {

// The page's route for the hooks of one state (a reload builds a new one with the new hooks),
// behind the daemon's UI credentials (Services::ui).
std::shared_ptr<const front::Route> make_ui_route(
    const std::vector<hooks::Hook>& hooks,
    const std::map<std::string, std::shared_ptr<hooks::HookSlots>>& slots, Services& services,
    const DaemonOptions& daemon);

}  // namespace idem::serve
