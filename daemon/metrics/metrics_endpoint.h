// GET /metrics over HTTP for Prometheus: prometheus-cpp's pull exposer (civetweb, on threads of its own)
// serving an SmMetrics. Started by main when metrics.listen (or --metrics) is set; stopped by its destructor.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "daemon/metrics/sm_metrics.h"
#include "fabric/result.h"

namespace prometheus {
class Exposer;
}

namespace ibsm::daemon {

class MetricsEndpoint {
 public:
  // listen is "ADDR:PORT" as the config accepts it ("127.0.0.1:9464", "0.0.0.0:9464"); port 0 takes any free
  // port (port() tells which). An address that cannot be bound is an error, not a throw.
  static fabric::Result<std::unique_ptr<MetricsEndpoint>> start(const std::string& listen,
                                                                const SmMetrics& metrics);
  ~MetricsEndpoint();
  MetricsEndpoint(const MetricsEndpoint&) = delete;
  MetricsEndpoint& operator=(const MetricsEndpoint&) = delete;

  uint16_t port() const { return port_; }
  // "http://127.0.0.1:9464/metrics", for the log.
  std::string url() const;

 private:
  MetricsEndpoint() = default;
  std::unique_ptr<prometheus::Exposer> exposer_;
  std::string host_;
  uint16_t port_ = 0;
};

}  // namespace ibsm::daemon
