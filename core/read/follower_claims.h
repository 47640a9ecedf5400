// FollowerClaims: what a read that may bring the files following it in its shard asks of whoever
// pushes them (fuse/push.h's Pusher): which files are worth reading, and a claim on each file it
// reads, so that concurrent reads do not read the same stretch of a shard for the same files.
#pragma once

#include <cstdint>

namespace packfs {

class FollowerClaims {
 public:
  enum class Take : uint8_t {
    kTaken,  // claimed for this read
    kSkip,   // not wanted (given already, or unknown to the kernel): the window reads past it
    kStop,   // claimed by another read, on its way: what follows is that read's, the window ends
  };
  // Worth reading now. Asked for every candidate before any catalog query: must be cheap.
  virtual bool Wanted(uint64_t ino) const = 0;
  // Claims `ino` for the caller. Of concurrent takes of one file, exactly one gets kTaken; the
  // claim lasts until the file is pushed or given back.
  virtual Take TakeFollower(uint64_t ino) = 0;
  // A file taken that the caller does not bring after all.
  virtual void GiveBack(uint64_t ino) = 0;

 protected:
  ~FollowerClaims() = default;
};

}  // namespace packfs
