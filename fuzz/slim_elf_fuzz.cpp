// slim_elf over arbitrary bytes: plan and write (into a memfd) for two policies. Any
// result that is written must parse again as ELF; nothing may crash, overrun or leak.
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "formats/elf.h"
#include "slim/elf_slim.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace tailor;
  Bytes in(reinterpret_cast<const std::byte*>(data), size);
  static int fd = ::memfd_create("slim_fuzz", 0);
  for (int variant = 0; variant < 2; ++variant) {
    slim::KeepPolicy p;
    p.devices = {variant ? cuda::ComputeCapability{9, 0} : cuda::ComputeCapability{8, 0}};
    p.ptx = variant ? slim::PtxPolicy::keep : slim::PtxPolicy::needed;
    auto r = slim::slim_elf(in, p, fd);
    if (!r || r->outcome != slim::SlimOutcome::slimmed) continue;
    std::vector<std::byte> out(static_cast<size_t>(::lseek(fd, 0, SEEK_END)));
    if (::pread(fd, out.data(), out.size(), 0) != static_cast<ssize_t>(out.size()))
      __builtin_trap();
    if (out.size() != r->size_after) __builtin_trap();
    if (!formats::parse_elf(Bytes(out.data(), out.size()))) __builtin_trap();
  }
  return 0;
}
