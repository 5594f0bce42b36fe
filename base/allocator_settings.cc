#include "base/allocator_settings.h"

#include <malloc.h>

#include <cstdlib>
#include <cstring>

namespace kspool {

bool ConfigureAllocator() {
#if defined(__GLIBC__)
  const char* tunables = std::getenv("GLIBC_TUNABLES");
  if (tunables && std::strstr(tunables, "glibc.malloc.mxfast")) return false;
  return mallopt(M_MXFAST, 0) == 1;
#else
  return false;
#endif
}

}  // namespace kspool
