// The reference for bench/inspect_wheel.sh: inflate every member of a wheel with
// libdeflate, one thread, into memory, and nothing else (no CRC, no hash, no analysis).
// This is the "plain decompression" that `tailor inspect` must stay within 2x of.
#include <libdeflate.h>

#include <chrono>
#include <cstdio>
#include <vector>

#include "formats/zip.h"
#include "util/mapped_file.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: inspect_wheel_bench WHEEL\n");
    return 2;
  }
  auto start = std::chrono::steady_clock::now();
  auto file = tailor::MappedFile::open(argv[1]);
  if (!file) {
    std::fprintf(stderr, "%s\n", file.error().message.c_str());
    return 2;
  }
  auto archive = tailor::formats::parse_zip(file->bytes());
  if (!archive) {
    std::fprintf(stderr, "%s\n", archive.error().message.c_str());
    return 2;
  }
  libdeflate_decompressor* d = libdeflate_alloc_decompressor();
  std::vector<std::byte> out;
  uint64_t total = 0;
  for (const auto& e : archive->entries) {
    auto raw = file->bytes().subspan(e.data_offset, e.compressed_size);
    if (e.method == tailor::formats::k_zip_stored) {
      total += raw.size();
      continue;
    }
    out.resize(e.uncompressed_size);
    size_t produced = 0;
    if (libdeflate_deflate_decompress(d, raw.data(), raw.size(), out.data(), out.size(),
                                      &produced) != LIBDEFLATE_SUCCESS) {
      std::fprintf(stderr, "%s: inflate failed\n", e.name.c_str());
      return 1;
    }
    total += produced;
  }
  libdeflate_free_decompressor(d);
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("members %zu  uncompressed %llu bytes  %.3f s  %.0f MB/s\n", archive->entries.size(),
              static_cast<unsigned long long>(total), secs, total / secs / 1e6);
  return 0;
}
