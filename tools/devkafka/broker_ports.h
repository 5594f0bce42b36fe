// Fixed listen ports for the mock cluster's brokers. librdkafka's mock cluster (2.0.2)
// binds each broker to 127.0.0.1 port 0 and has no API to choose the port, so
// kspool-devkafka defines bind() itself: while armed, the next binds of IPv4 sockets to
// port 0 take the given ports, in order, with SO_REUSEADDR (so that a cluster restarted
// on the ports of the one before it binds while that one's connections linger in
// TIME_WAIT). librdkafka makes broker 1, 2, ... in that order, in the thread that calls
// rd_kafka_mock_cluster_new(). A port that cannot be bound ends the process (exit 1),
// naming it. Every other bind() passes through unchanged.
//
// Thread safety: Arm/Disarm and bind() are safe from any thread (one internal mutex);
// arm only around rd_kafka_mock_cluster_new(), where nothing else of the process binds.
#pragma once

#include <string>
#include <vector>

namespace kspool::devkafka {

// Parses "P1,P2,..." (each 1..65535). False on a malformed list.
bool ParseBrokerPorts(const std::string& text, std::vector<int>* ports);

// The next ports.size() binds to port 0 take these ports.
void ArmBrokerPorts(const std::vector<int>& ports);

// Stops rewriting; returns how many of the armed ports were taken.
size_t DisarmBrokerPorts();

}  // namespace kspool::devkafka
