// The fifo jobserver with a real named pipe: tokens minted, taken by a client that opens
// the fifo as Ninja does (its own read and write ends), returned, withdrawn.
#include "util/jobserver.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "support/fixtures.h"

using namespace tailor;
using tailor::test::scratch_dir;

namespace {

/// Ninja's client: O_RDONLY|O_NONBLOCK and O_WRONLY|O_NONBLOCK opens of the path.
struct Client {
  int rd = -1, wr = -1;
  explicit Client(const std::string& path) {
    rd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    wr = ::open(path.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC);
  }
  ~Client() {
    if (rd >= 0) ::close(rd);
    if (wr >= 0) ::close(wr);
  }
  bool take(char& c) { return ::read(rd, &c, 1) == 1; }
  bool give(char c) { return ::write(wr, &c, 1) == 1; }
  /// Tokens waiting in the pipe now (FIONREAD on the client's read end).
  size_t in_pipe() const {
    int n = -1;
    EXPECT_EQ(::ioctl(rd, FIONREAD, &n), 0);
    return n < 0 ? 0 : static_cast<size_t>(n);
  }
};

}  // namespace

TEST(FifoJobserver, MintsTokensClientsTakeAndReturn) {
  auto dir = scratch_dir("jobserver");
  std::string path = (dir / "js.fifo").string();
  auto js = FifoJobserver::create(path, 3);
  ASSERT_TRUE(js) << js.error().message;
  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_TRUE(S_ISFIFO(st.st_mode));
  EXPECT_EQ((*js)->makeflags(4), " -j4 --jobserver-auth=fifo:" + path);

  Client client(path);
  ASSERT_GE(client.rd, 0);
  ASSERT_GE(client.wr, 0);
  // What the client holds: the tokens in existence less those waiting in the pipe.
  auto held = [&] { return (*js)->minted() - client.in_pipe(); };
  EXPECT_EQ((*js)->minted(), 3u);
  EXPECT_EQ(client.in_pipe(), 3u);
  EXPECT_EQ(held(), 0u);
  char a = 0, b = 0, c = 0, d = 0;
  ASSERT_TRUE(client.take(a));
  ASSERT_TRUE(client.take(b));
  EXPECT_EQ(a, '+');
  EXPECT_EQ(held(), 2u);
  ASSERT_TRUE(client.take(c));
  EXPECT_FALSE(client.take(d)) << "three tokens minted, a fourth read must find the pipe empty";
  EXPECT_EQ(held(), 3u);

  // Surplus tokens are withdrawn only from the pipe: the held ones stay with the client.
  EXPECT_EQ((*js)->withdraw(2), 0u);
  EXPECT_EQ((*js)->minted(), 3u);
  ASSERT_TRUE(client.give(a));
  EXPECT_EQ(held(), 2u);
  EXPECT_EQ((*js)->withdraw(2), 1u);
  EXPECT_EQ((*js)->minted(), 2u);
  EXPECT_EQ(held(), 2u);

  // More tokens: the client can take them at once.
  EXPECT_EQ((*js)->mint(2), 2u);
  EXPECT_EQ((*js)->minted(), 4u);
  ASSERT_TRUE(client.take(d));
  EXPECT_EQ(held(), 3u);
  ASSERT_TRUE(client.give(b));
  ASSERT_TRUE(client.give(c));
  ASSERT_TRUE(client.give(d));
  EXPECT_EQ(client.in_pipe(), 4u);
  EXPECT_EQ((*js)->withdraw(10), 4u);
  EXPECT_EQ((*js)->minted(), 0u);
  EXPECT_EQ(client.in_pipe(), 0u);
  js->reset();
  EXPECT_NE(::access(path.c_str(), F_OK), 0) << "the fifo is removed with its server";
}

TEST(FifoJobserver, ReplacesAStaleFileAndNamesAnUnwritableFolder) {
  auto dir = scratch_dir("jobserver-stale");
  std::string path = (dir / "js.fifo").string();
  {
    FILE* f = std::fopen(path.c_str(), "w");
    ASSERT_NE(f, nullptr);
    std::fclose(f);
  }
  auto js = FifoJobserver::create(path, 1);
  ASSERT_TRUE(js) << js.error().message;
  EXPECT_EQ(Client(path).in_pipe(), 1u);
  auto missing = FifoJobserver::create((dir / "no-such-folder" / "js.fifo").string(), 1);
  ASSERT_FALSE(missing);
  EXPECT_NE(
      missing.error().message.find("no-such-folder/js.fifo: cannot create the jobserver fifo"),
      std::string::npos)
      << missing.error().message;
}
