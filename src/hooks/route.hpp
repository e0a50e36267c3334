#pragma once
// A native hook's route (a hook of the config's "hooks" section): its admission (the
// hook's allow list, methods and body limit), then deliver() (contract §6's table).
#include <functional>
#include <memory>

#include "front/route.hpp"
#include "hooks/config.hpp"
#include "hooks/delivery.hpp"
#include "hooks/slots.hpp"

namespace idem::hooks {

// What a hook's route uses of the daemon (a native hook's and a hooks file's), made once when
// the hook is loaded.
struct RouteServices {
  DeliveryServices delivery;  // its spawn keeps the hook's slots and counts the run in flight
  std::function<void(int delta)> in_flight;  // a delivery being answered: +1, then -1
};

// The route of one configured hook, at its path.
std::shared_ptr<const front::Route> hook_route(Hook hook, std::shared_ptr<HookSlots> slots,
                                               RouteServices services);

}  // namespace idem::hooks
