// libibmad field access on const-correct buffers, shared by the codecs (libibmad's accessors take non-const
// buffers even for reads). Only for .cc files of mad/: it pulls in <infiniband/mad.h>.
#pragma once

#include <infiniband/mad.h>

#include <cstdint>

namespace ibsm::mad::fields {

inline uint32_t get(const uint8_t* buf, MAD_FIELDS f) {
  return mad_get_field(const_cast<uint8_t*>(buf), 0, f);
}
inline uint64_t get64(const uint8_t* buf, MAD_FIELDS f) {
  return mad_get_field64(const_cast<uint8_t*>(buf), 0, f);
}
inline void set(uint8_t* buf, MAD_FIELDS f, uint32_t v) {
  mad_set_field(buf, 0, f, v);
}
inline void set64(uint8_t* buf, MAD_FIELDS f, uint64_t v) {
  mad_set_field64(buf, 0, f, v);
}

}  // namespace ibsm::mad::fields
