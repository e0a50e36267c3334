#include "serve/services.hpp"

#include <utility>

namespace idem::http {

DeliveryServices delivery_services(Services& all, const std::string& path,
                                   std::shared_ptr<HookSlots> slots) {
  DeliveryServices services;
  services.stores = all.stores;
  services.owner = all.owner;
  services.front = all.front;
  services.spawn = [&all, path, slots](std::function<void()> fn) {
    all.metrics.in_flight(path, 1);
    all.background.spawn([&all, path, slots, fn = std::move(fn)] {
      fn();
      all.metrics.in_flight(path, -1);
    });
  };
  return services;
}

}  // namespace idem::http
