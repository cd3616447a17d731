// A GNU make 4.4 style jobserver served over a named pipe ("fifo" mode). The server
// creates the fifo, keeps it open (read and write, so clients can open either end and
// tokens survive while no client has it open) and decides how many one-byte tokens
// exist: `mint` writes new ones, `withdraw` reads spare ones back out. A client reads a
// byte before starting an extra job and writes it back when the job ends; every client
// also has one implicit token. Clients find the fifo through
// `MAKEFLAGS=" -j<N> --jobserver-auth=fifo:<path>"` (Ninja 1.13 joins when it is given
// no -j). Tokens clients hold are `minted()` less the bytes waiting in the pipe.
#pragma once
#include <cstddef>
#include <memory>
#include <string>

#include "util/expected.h"

namespace tailor {

class FifoJobserver {
 public:
  /// Creates the fifo at `path` (an old file there is replaced) holding `tokens` tokens.
  static Expected<std::unique_ptr<FifoJobserver>> create(const std::string& path, size_t tokens);
  ~FifoJobserver();  ///< closes and removes the fifo
  FifoJobserver(const FifoJobserver&) = delete;
  FifoJobserver& operator=(const FifoJobserver&) = delete;

  /// Writes `n` new tokens; returns how many went in (the pipe holds 64 KiB).
  size_t mint(size_t n);
  /// Reads up to `n` tokens back out of the pipe (never waits); returns how many.
  size_t withdraw(size_t n);
  /// Tokens in existence: written and not withdrawn.
  size_t minted() const { return m_minted; }
  const std::string& path() const { return m_path; }
  /// The MAKEFLAGS value for clients; `jobs` is the -j make itself would show.
  std::string makeflags(size_t jobs) const;

 private:
  FifoJobserver(std::string path, int fd) : m_path(std::move(path)), m_fd(fd) {}
  std::string m_path;
  int m_fd = -1;
  size_t m_minted = 0;
};

}  // namespace tailor
