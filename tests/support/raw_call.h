// RawUnaryCall: calls a unary gRPC method with arbitrary request bytes (a
// grpc::GenericStub, no protobuf on the client side), to send what a typed stub cannot:
// garbage, truncated messages, invalid UTF-8 in `string` fields.
#pragma once

#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>

#include <chrono>
#include <future>
#include <map>
#include <string>

namespace kspool::testing {

struct RawReply {
  grpc::Status status;
  std::string body;                                 // the response bytes when OK
  std::multimap<std::string, std::string> trailers;  // trailing metadata
};

// `method`: "/package.Service/Method".
inline RawReply RawUnaryCall(const std::shared_ptr<grpc::Channel>& channel,
                             const std::string& method, const std::string& request,
                             std::chrono::milliseconds timeout = std::chrono::seconds(10)) {
  grpc::GenericStub stub(channel);
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + timeout);
  grpc::Slice slice(request);
  grpc::ByteBuffer req(&slice, 1);
  grpc::ByteBuffer resp;
  std::promise<grpc::Status> done;
  stub.UnaryCall(&ctx, method, grpc::StubOptions(), &req, &resp,
                 [&done](grpc::Status s) { done.set_value(std::move(s)); });
  RawReply reply;
  reply.status = done.get_future().get();
  for (const auto& [k, v] : ctx.GetServerTrailingMetadata()) {
    reply.trailers.emplace(std::string(k.data(), k.size()), std::string(v.data(), v.size()));
  }
  if (reply.status.ok()) {
    std::vector<grpc::Slice> slices;
    if (resp.Dump(&slices).ok()) {
      for (const grpc::Slice& s : slices) {
        reply.body.append(reinterpret_cast<const char*>(s.begin()), s.size());
      }
    }
  }
  return reply;
}

}  // namespace kspool::testing
