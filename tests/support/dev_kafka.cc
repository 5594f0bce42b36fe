#include "tests/support/dev_kafka.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <stdexcept>

namespace kspool::testing {

DevKafka::DevKafka(const std::string& log_dir, int brokers, const std::vector<std::string>& topics,
                   const std::vector<std::string>& extra_args) {
  std::vector<std::string> argv = {KSPOOL_DEVKAFKA_BIN, "--brokers", std::to_string(brokers)};
  for (const auto& t : topics) {
    argv.push_back("--topic");
    argv.push_back(t);
  }
  argv.insert(argv.end(), extra_args.begin(), extra_args.end());
  proc_ = std::make_unique<ChildProcess>(argv, log_dir + "/devkafka.log");
  auto b = proc_->WaitForLine("BOOTSTRAP ", std::chrono::seconds(20));
  auto c = proc_->WaitForLine("CONTROL ", std::chrono::seconds(20));
  auto r = proc_->WaitForLine("READY", std::chrono::seconds(20));
  if (!b || !c || !r) throw std::runtime_error("kspool-devkafka did not start");
  bootstrap_ = *b;
  size_t colon = c->rfind(':');
  control_host_ = c->substr(0, colon);
  control_port_ = std::stoi(c->substr(colon + 1));
}

std::string DevKafka::broker_ports() const {
  std::string ports;
  for (size_t start = 0; start < bootstrap_.size();) {
    size_t end = bootstrap_.find(',', start);
    if (end == std::string::npos) end = bootstrap_.size();
    const std::string broker = bootstrap_.substr(start, end - start);
    if (!ports.empty()) ports += ",";
    ports += broker.substr(broker.rfind(':') + 1);
    start = end + 1;
  }
  return ports;
}

void DevKafka::Stop() {
  proc_->Signal(SIGTERM);
  if (!proc_->Wait(std::chrono::seconds(10))) {
    proc_->Signal(SIGKILL);
    (void)proc_->Wait(std::chrono::seconds(10));
  }
}

std::string DevKafka::Command(const std::string& line) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(control_port_));
  inet_pton(AF_INET, control_host_.c_str(), &addr.sin_addr);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    close(fd);
    return "ERR cannot connect to devkafka control socket";
  }
  std::string msg = line + "\n";
  (void)!write(fd, msg.data(), msg.size());
  std::string reply;
  char ch;
  while (read(fd, &ch, 1) == 1 && ch != '\n') reply.push_back(ch);
  close(fd);
  return reply;
}

}  // namespace kspool::testing
