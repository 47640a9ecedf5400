// NameThread: names the calling thread, as `top -H`, `ps -L`, perf and /proc/PID/task/*/comm
// show it, so that a look at a busy daemon tells its push, walk and list threads apart.
#pragma once

namespace packfs {

// At most 15 bytes are kept (the kernel's limit); longer names are cut.
void NameThread(const char* name);

}  // namespace packfs
