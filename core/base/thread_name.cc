// NameThread over pthread_setname_np (see thread_name.h).
#include "core/base/thread_name.h"

#include <pthread.h>

#include <cstring>

namespace packfs {

void NameThread(const char* name) {
  char cut[16] = {};
  std::strncpy(cut, name, sizeof cut - 1);
  ::pthread_setname_np(::pthread_self(), cut);
}

}  // namespace packfs
