#include "daemon/service/metrics_feed.h"

namespace ibsm::daemon {

SmMetrics::MadTotals madTotals(const mad::MadCounters& c) {
  return {c.sent,   c.received, c.responses,  c.timeouts,    c.retries,
          c.failed, c.dropped,  c.unexpected, c.unsolicited, c.sendErrors};
}

SmMetrics::TrapTotals trapTotals(const TrapHandler::Counters& c) {
  return {c.malformed, c.duplicates, c.byNumber, c.otherNumbers};
}

SmMetrics::SaTotals saTotals(const SaCounters& c) {
  return {c.malformed, c.byAttrStatus, c.otherAttrStatus};
}

}  // namespace ibsm::daemon
