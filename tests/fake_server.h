// A hostile MariaDB server for tests: it speaks just enough of the client/server protocol
// to accept a login, then answers the first query with a LOCAL INFILE request for a file
// of its choosing, and records every byte the client sends back. It listens on
// 127.0.0.1 (an ephemeral port) and serves one connection at a time until destroyed.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>

namespace rw::testing {

class FakeInfileServer {
 public:
  explicit FakeInfileServer(std::string wanted_file) : wanted_(std::move(wanted_file)) {
    listen_fd_ = socket(AF_INET, SOCK_STREAM, 0);
    int one = 1;
    setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = 0;
    bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
    listen(listen_fd_, 4);
    socklen_t len = sizeof addr;
    getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
    thread_ = std::thread([this] { Serve(); });
  }
  ~FakeInfileServer() {
    stop_ = true;
    shutdown(listen_fd_, SHUT_RDWR);
    close(listen_fd_);
    thread_.join();
  }

  unsigned port() const { return port_; }
  // Every byte received after the LOCAL INFILE request, over all connections.
  std::string received_after_request() {
    std::lock_guard<std::mutex> l(mu_);
    return received_;
  }
  int requests_sent() const { return requests_.load(); }

 private:
  static bool ReadFull(int fd, void* buf, size_t n) {
    auto* p = static_cast<char*>(buf);
    while (n > 0) {
      pollfd pf{fd, POLLIN, 0};
      if (poll(&pf, 1, 1000) <= 0) return false;  // an idle client: end the session
      const ssize_t r = read(fd, p, n);
      if (r <= 0) return false;
      p += r;
      n -= static_cast<size_t>(r);
    }
    return true;
  }
  // One protocol packet: 3-byte length, sequence id, payload.
  static bool ReadPacket(int fd, std::string& payload, uint8_t& seq) {
    unsigned char h[4];
    if (!ReadFull(fd, h, 4)) return false;
    const size_t len = h[0] | (h[1] << 8) | (h[2] << 16);
    seq = h[3];
    payload.assign(len, '\0');
    return len == 0 || ReadFull(fd, payload.data(), len);
  }
  static void WritePacket(int fd, const std::string& payload, uint8_t seq) {
    std::string p;
    p += static_cast<char>(payload.size() & 0xff);
    p += static_cast<char>((payload.size() >> 8) & 0xff);
    p += static_cast<char>((payload.size() >> 16) & 0xff);
    p += static_cast<char>(seq);
    p += payload;
    (void)!write(fd, p.data(), p.size());
  }
  static std::string Ok() { return std::string("\x00\x00\x00\x02\x00\x00\x00", 7); }

  void Serve() {
    while (!stop_) {
      pollfd pf{listen_fd_, POLLIN, 0};
      if (poll(&pf, 1, 100) <= 0) continue;
      const int fd = accept(listen_fd_, nullptr, nullptr);
      if (fd < 0) continue;
      Session(fd);
      close(fd);
    }
  }

  void Session(int fd) {
    // Handshake v10 offering mysql_native_password, LOCAL FILES, protocol 4.1; no TLS.
    std::string hs;
    hs += '\x0a';
    hs += std::string("5.5.5-10.11.0-hostile") + '\0';
    hs += std::string("\x01\x00\x00\x00", 4);       // connection id
    hs += "abcdefgh";                                // scramble part 1
    hs += '\0';
    hs += std::string("\x8f\xa2", 2);                // capabilities (low): 0xA28F
    hs += '\x2d';                                    // utf8mb4
    hs += std::string("\x02\x00", 2);                // status: autocommit
    hs += std::string("\x0f\x00", 2);                // capabilities (high): plugin auth, multi results
    hs += '\x15';                                    // auth data length 21
    hs += std::string(10, '\0');
    hs += std::string("ijklmnopqrst") + '\0';        // scramble part 2
    hs += std::string("mysql_native_password") + '\0';
    WritePacket(fd, hs, 0);
    std::string pkt;
    uint8_t seq = 0;
    if (!ReadPacket(fd, pkt, seq)) return;  // the login; any password is fine
    WritePacket(fd, Ok(), seq + 1);
    // Every query: answer with a LOCAL INFILE request, record what comes back.
    while (ReadPacket(fd, pkt, seq)) {
      if (pkt.empty() || pkt[0] == 0x01) return;  // COM_QUIT
      if (pkt[0] != 0x03) {                       // not a query (ping, ...): OK
        WritePacket(fd, Ok(), seq + 1);
        continue;
      }
      WritePacket(fd, std::string("\xfb", 1) + wanted_, seq + 1);
      ++requests_;
      // The client sends the file in packets, then an empty one (or just the empty one).
      for (;;) {
        if (!ReadPacket(fd, pkt, seq)) return;
        if (pkt.empty()) break;
        std::lock_guard<std::mutex> l(mu_);
        received_ += pkt;
      }
      WritePacket(fd, Ok(), seq + 1);
    }
  }

  const std::string wanted_;
  int listen_fd_ = -1;
  unsigned port_ = 0;
  std::atomic<bool> stop_{false};
  std::atomic<int> requests_{0};
  std::mutex mu_;
  std::string received_;
  std::thread thread_;
};

}  // namespace rw::testing
