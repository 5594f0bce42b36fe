// kspool-devkafka: a local Kafka-protocol cluster (librdkafka's mock cluster) for development
// and tests, steered by text commands on a loopback TCP control socket and on stdin.
#include <arpa/inet.h>
#include <fcntl.h>
#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "broker_ports.h"
#include "fault_commands.h"

namespace {

using kspool::devkafka::FaultCommands;

struct Options {
  int brokers = 3;
  std::vector<std::pair<std::string, int>> topics;
  int control_port = 0;
  std::vector<int> broker_ports;  // empty: any free ones
};

void PrintUsage(FILE* out) {
  std::fprintf(out,
               "usage: kspool-devkafka [--brokers N] [--topic NAME:PARTITIONS]... "
               "[--control-port P] [--broker-ports P1,P2,...]\n\n"
               "Runs librdkafka's mock Kafka cluster on 127.0.0.1 until SIGTERM, SIGINT or the\n"
               "shutdown command. Prints 'BOOTSTRAP <brokers>', 'CONTROL 127.0.0.1:<port>' and\n"
               "'READY' on stdout, then reads commands, one per line, from the control socket\n"
               "and from stdin (EOF on stdin is ignored):\n\n%s\n"
               "flags:\n"
               "  --brokers N             brokers, ids 1..N (default 3)\n"
               "  --topic NAME:PARTITIONS create a topic at startup (repeatable)\n"
               "  --control-port P        control port on 127.0.0.1 (default 0: any free one)\n"
               "  --broker-ports P1,...   the brokers' ports on 127.0.0.1, one per broker (default:\n"
               "                          any free ones); a cluster started again on the ports\n"
               "                          of the one before is the same bootstrap to clients\n"
               "  --help                  this text\n",
               FaultCommands::Usage());
}

[[noreturn]] void BadFlag(const std::string& message) {
  std::fprintf(stderr, "kspool-devkafka: %s (see --help)\n", message.c_str());
  std::exit(2);
}

int ParseIntFlag(const std::string& flag, const std::string& value, int min, int max) {
  int v = 0;
  auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), v);
  if (ec != std::errc() || end != value.data() + value.size() || v < min || v > max) {
    BadFlag(flag + ": bad value '" + value + "' (expected " + std::to_string(min) + ".." +
            std::to_string(max) + ")");
  }
  return v;
}

Options ParseFlags(int argc, char** argv) {
  Options options;
  std::set<std::string> topic_names;
  for (int i = 1; i < argc; ++i) {
    std::string flag = argv[i], value;
    const size_t eq = flag.find('=');
    const bool inline_value = flag.compare(0, 2, "--") == 0 && eq != std::string::npos;
    if (inline_value) {
      value = flag.substr(eq + 1);
      flag.resize(eq);
    }
    if (flag == "--help" || flag == "-h") {
      PrintUsage(stdout);
      std::exit(0);
    }
    if (flag != "--brokers" && flag != "--topic" && flag != "--control-port" &&
        flag != "--broker-ports") {
      BadFlag("unknown flag " + flag);
    }
    if (!inline_value) {
      if (i + 1 >= argc) BadFlag(flag + ": missing value");
      value = argv[++i];
    }
    if (flag == "--brokers") {
      options.brokers = ParseIntFlag(flag, value, 1, 100);
    } else if (flag == "--broker-ports") {
      if (!kspool::devkafka::ParseBrokerPorts(value, &options.broker_ports)) {
        BadFlag("--broker-ports: expected P1,P2,... (1..65535), got " + value);
      }
    } else if (flag == "--control-port") {
      options.control_port = ParseIntFlag(flag, value, 0, 65535);
    } else {
      const size_t colon = value.rfind(':');
      if (colon == std::string::npos) BadFlag("--topic: expected NAME:PARTITIONS, got " + value);
      const std::string name = value.substr(0, colon);
      if (!FaultCommands::IsValidTopicName(name)) BadFlag("--topic: bad topic name '" + name + "'");
      if (!topic_names.insert(name).second) BadFlag("--topic: duplicate topic " + name);
      options.topics.emplace_back(name, ParseIntFlag(flag, value.substr(colon + 1), 1, 10000));
    }
  }
  if (!options.broker_ports.empty() &&
      options.broker_ports.size() != static_cast<size_t>(options.brokers)) {
    BadFlag("--broker-ports: " + std::to_string(options.broker_ports.size()) + " ports for " +
            std::to_string(options.brokers) + " brokers");
  }
  return options;
}

bool WriteAll(int fd, const std::string& data) {
  for (size_t done = 0; done < data.size();) {
    const ssize_t n = write(fd, data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

// Serves one command stream until EOF or error: the stdin/stdout pair or a control socket.
void Serve(FaultCommands* commands, int in_fd, int out_fd) {
  constexpr size_t kMaxLine = 64 * 1024;
  std::string pending;
  char chunk[4096];
  bool open = true;
  while (open) {
    const ssize_t n = read(in_fd, chunk, sizeof(chunk));
    if (n < 0 && errno == EINTR) continue;
    if (n > 0) {
      pending.append(chunk, static_cast<size_t>(n));
    } else {
      open = false;
      if (!pending.empty()) pending += '\n';  // Last line without a newline.
    }
    for (size_t eol; (eol = pending.find('\n')) != std::string::npos;) {
      std::string line = pending.substr(0, eol);
      pending.erase(0, eol + 1);
      std::replace(line.begin(), line.end(), '\r', ' ');
      const std::string reply = commands->Execute(line);
      if (!reply.empty() && !WriteAll(out_fd, reply + "\n")) open = false;
      if (commands->shutdown_requested()) kill(getpid(), SIGTERM);  // Main thread exits.
    }
    if (pending.size() > kMaxLine) {
      WriteAll(out_fd, "ERR line too long\n");
      open = false;
    }
  }
  if (in_fd != STDIN_FILENO) close(in_fd);
}

// Returns a socket listening on 127.0.0.1:port (0 = any free port) and sets *bound_port.
int Listen(int port, int* bound_port) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  const int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  socklen_t len = sizeof(addr);
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 || listen(fd, 16) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    const int saved = errno;
    close(fd);
    errno = saved;
    return -1;
  }
  *bound_port = ntohs(addr.sin_port);
  return fd;
}

void AcceptLoop(FaultCommands* commands, int listen_fd) {
  for (;;) {
    const int fd = accept4(listen_fd, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd >= 0) {
      std::thread(Serve, commands, fd, fd).detach();
    } else if (errno != EINTR && errno != ECONNABORTED) {
      std::perror("kspool-devkafka: accept");
      usleep(100 * 1000);  // E.g. EMFILE: back off instead of spinning.
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  // A closed stdin/stdout/stderr would let a socket take fd 0..2, and the stdin reader or the
  // reply writer would then steal or corrupt its traffic: park /dev/null there instead.
  for (int fd = 0; fd <= 2; ++fd) {
    if (fcntl(fd, F_GETFD) == -1 && errno == EBADF && open("/dev/null", O_RDWR) != fd) return 1;
  }
  const Options options = ParseFlags(argc, argv);

  // Block the exit signals before any thread (ours or librdkafka's) starts, so that only
  // sigwait() below receives them; ignore SIGPIPE from clients that hang up early.
  sigset_t exit_signals;
  sigemptyset(&exit_signals);
  sigaddset(&exit_signals, SIGTERM);
  sigaddset(&exit_signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &exit_signals, nullptr);
  signal(SIGPIPE, SIG_IGN);

  char errstr[512];
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  if (rd_kafka_conf_set(conf, "log_level", "3", errstr, sizeof(errstr)) != RD_KAFKA_CONF_OK) {
    std::fprintf(stderr, "kspool-devkafka: log_level: %s\n", errstr);
    return 1;
  }
  rd_kafka_t* rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, sizeof(errstr));
  if (rk == nullptr) {
    std::fprintf(stderr, "kspool-devkafka: rd_kafka_new: %s\n", errstr);
    return 1;
  }
  kspool::devkafka::ArmBrokerPorts(options.broker_ports);
  rd_kafka_mock_cluster_t* mcluster = rd_kafka_mock_cluster_new(rk, options.brokers);
  const size_t ports_taken = kspool::devkafka::DisarmBrokerPorts();
  if (mcluster != nullptr && ports_taken != options.broker_ports.size()) {
    std::fprintf(stderr, "kspool-devkafka: --broker-ports: the mock cluster bound %zu of %zu\n",
                 ports_taken, options.broker_ports.size());
    std::_Exit(1);
  }
  if (mcluster == nullptr) {
    std::fprintf(stderr, "kspool-devkafka: rd_kafka_mock_cluster_new failed\n");
    rd_kafka_destroy(rk);
    return 1;
  }
  // Never deleted: detached threads may still hold it when the process exits.
  auto* commands = new FaultCommands(mcluster, options.brokers);
  int exit_code = 0;
  for (const auto& [name, partitions] : options.topics) {
    const std::string reply =
        commands->Execute("topic create " + name + " " + std::to_string(partitions));
    if (reply != "OK") {
      std::fprintf(stderr, "kspool-devkafka: --topic %s: %s\n", name.c_str(), reply.c_str());
      exit_code = 1;
    }
  }
  int port = 0;
  const int listen_fd = exit_code ? -1 : Listen(options.control_port, &port);
  if (exit_code == 0 && listen_fd < 0) {
    std::fprintf(stderr, "kspool-devkafka: control socket 127.0.0.1:%d: %s\n", options.control_port,
                 std::strerror(errno));
    exit_code = 1;
  }
  if (exit_code == 0) {
    std::printf("BOOTSTRAP %s\nCONTROL 127.0.0.1:%d\nREADY\n",
                rd_kafka_mock_cluster_bootstraps(mcluster), port);
    std::fflush(stdout);
    std::thread(AcceptLoop, commands, listen_fd).detach();
    std::thread(Serve, commands, STDIN_FILENO, STDOUT_FILENO).detach();
    int signal_number = 0;
    sigwait(&exit_signals, &signal_number);
  }
  commands->Close();  // Waits for a command in progress; later ones get "ERR shutting down".
  rd_kafka_mock_cluster_destroy(mcluster);
  rd_kafka_destroy(rk);
  std::fflush(stdout);
  std::_Exit(exit_code);  // Skip static destructors: detached threads are still running.
}
