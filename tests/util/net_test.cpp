#include "util/net.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

using namespace tailor;

TEST(Net, ConnectsToAListenerAndNamesARefusal) {
  auto port = free_loopback_port();
  ASSERT_TRUE(port) << port.error().message;
  int listener = ::socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(listener, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(static_cast<uint16_t>(*port));
  ASSERT_EQ(::bind(listener, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  ASSERT_EQ(::listen(listener, 1), 0);
  auto fd = connect_tcp("127.0.0.1", std::to_string(*port), std::chrono::milliseconds(2000));
  ASSERT_TRUE(fd) << fd.error().message;
  ::close(*fd);
  ::close(listener);
  auto refused = connect_tcp("127.0.0.1", std::to_string(*port), std::chrono::milliseconds(2000));
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().message.find("cannot connect to 127.0.0.1:"), std::string::npos)
      << refused.error().message;
  auto unknown = connect_tcp("no-such-host.invalid", "1", std::chrono::milliseconds(500));
  ASSERT_FALSE(unknown);
  EXPECT_NE(unknown.error().message.find("cannot resolve"), std::string::npos)
      << unknown.error().message;
}
