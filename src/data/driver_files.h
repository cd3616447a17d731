// The build driver (driver/: tailor-build-wheel.py and the tailor_driver package it
// imports), embedded in the binary as data/ is, by cmake/EmbedData.cmake; plan writes it
// beside a package's source and the build runs it there.
#pragma once
#include <span>

#include "data/data_files.h"

namespace tailor::data {

/// The driver's files, each relative to driver/: "tailor-build-wheel.py", the program a
/// build runs, and "tailor_driver/<module>.py", the package it imports, written beside it.
std::span<const DataFile> driver_files();

}  // namespace tailor::data
