#include "daemon/metrics/metrics_endpoint.h"

#include <prometheus/exposer.h>

#include <exception>
#include <vector>

namespace ibsm::daemon {

fabric::Result<std::unique_ptr<MetricsEndpoint>> MetricsEndpoint::start(const std::string& listen,
                                                                        const SmMetrics& metrics) {
  const size_t colon = listen.rfind(':');
  if (colon == std::string::npos || colon == 0) {
    std::string m = "metrics: '";
    m += listen;
    m += "' is not ADDR:PORT";
    return fabric::makeError(m);
  }
  std::unique_ptr<MetricsEndpoint> e(new MetricsEndpoint());
  e->host_ = listen.substr(0, colon);
  try {
    // Two threads: Prometheus scrapes one request at a time; a second serves a curl meanwhile.
    e->exposer_ = std::make_unique<prometheus::Exposer>(listen, 2);
  } catch (const std::exception& ex) {
    std::string m = "metrics: cannot listen on ";
    m += listen;
    m += " (";
    m += ex.what();
    m += "); is the port in use or the address not local?";
    return fabric::makeError(m);
  }
  e->exposer_->RegisterCollectable(metrics.collectable());
  std::vector<int> ports = e->exposer_->GetListeningPorts();
  e->port_ = ports.empty() ? 0 : static_cast<uint16_t>(ports.front());
  return e;
}

MetricsEndpoint::~MetricsEndpoint() = default;

std::string MetricsEndpoint::url() const {
  std::string u = "http://";
  u += host_;
  u += ':';
  u += std::to_string(port_);
  u += "/metrics";
  return u;
}

}  // namespace ibsm::daemon
