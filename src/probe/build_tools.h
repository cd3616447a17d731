// Loader of data/probe/build_tools.toml: what tailor knows of the build tools it finds.
#pragma once
#include <string>

namespace tailor::probe {

/// The first version of each tool that is a make fifo jobserver client.
struct JobserverClientSince {
  std::string ninja;  ///< "1.13"
  std::string make;   ///< "4.4"
};

/// The data file's table, read once (a DataError names the file and key).
const JobserverClientSince& jobserver_client_since();

}  // namespace tailor::probe
