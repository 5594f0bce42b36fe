// SendStream's lifetime when a request completes outside gRPC's reactions (here the
// test thread plays the drain, resolving a WAIT_FOR_KAFKA request) just as the client
// cancels: the completion retires the cancelled answer, finishes the call while holding
// its lock, and gRPC may run OnDone on another thread at once. The call must outlive the
// completing thread's unlock. SpoolService's stream hook holds each moment open, so the
// window is hit every time: the completion waits until OnCancel has run, and after
// Finish() it waits while gRPC runs OnDone. Before the call was owned by shared_ptrs,
// OnDone deleted it in that wait: ASan reports a heap-use-after-free at the unlock, and
// any build sees the call destroyed while its completion still held the lock.
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <condition_variable>
#include <mutex>
#include <thread>

#include "agent/api/spool_service.h"
#include "base/clock.h"
#include "tests/support/temp_dir.h"
#include "tests/support/wait.h"
#include "wal/wal.h"

namespace kspool::agent {
namespace {

using namespace std::chrono_literals;
using Event = SpoolService::StreamEvent;

// What the hook saw of the call under test.
struct Observed {
  std::mutex mu;
  std::condition_variable cv;
  std::thread::id completer;            // the test thread: only its completion is held
  grpc::ClientContext* client = nullptr;  // cancelled when the completion starts
  const void* cancelled = nullptr;        // the call whose OnCancel ran
  const void* finishing = nullptr;        // the call finished by the completion, lock held
  const void* done = nullptr;             // the call whose OnDone ran
  const void* destroyed = nullptr;        // the call destroyed last
  bool destroyed_while_locked = false;
  int finished_by_completion = 0;
};

class SpoolStreamLifetime : public ::testing::Test {
 protected:
  void SetUp() override {
    wal::Options o;
    o.dir = dir_.path();
    o.clock = &clock_;
    auto wal = wal::Wal::Open(o);
    ASSERT_TRUE(wal.ok()) << wal.status();
    wal_ = std::move(wal).value();
    feed_ = std::make_unique<DeliveryFeed>(wal_.get());
    service_ = std::make_unique<SpoolService>(
        wal_.get(), wal_.get(), RequestLimits{}, [] {},
        [](absl::StatusCode) { return int64_t{123}; }, nullptr, nullptr, &clock_, 0, &waiters_,
        feed_.get());
    service_->set_stream_hook_for_test([this](Event e, const void* call) { Hook(e, call); });
    grpc::ServerBuilder builder;
    int port = 0;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
    builder.RegisterService(service_.get());
    server_ = builder.BuildAndStart();
    ASSERT_TRUE(server_ && port > 0);
    stub_ = kspool::v1::Spool::NewStub(grpc::CreateChannel(
        "127.0.0.1:" + std::to_string(port), grpc::InsecureChannelCredentials()));
  }
  void TearDown() override {
    waiters_.Close();
    if (feed_) feed_->Close();
    if (server_) server_->Shutdown();
    service_.reset();
    wal_.reset();
  }

  void Hook(Event e, const void* call) {
    std::unique_lock<std::mutex> l(seen_.mu);
    const bool completer = std::this_thread::get_id() == seen_.completer;
    switch (e) {
      case Event::kCancelled:
        seen_.cancelled = call;
        seen_.cv.notify_all();
        return;
      case Event::kCompleting:
        if (!completer || seen_.client == nullptr) return;
        // The client goes away now; the completion goes on once the call knows it.
        seen_.client->TryCancel();
        seen_.cv.wait_for(l, 5s, [&] { return seen_.cancelled == call; });
        return;
      case Event::kFinished:
        if (!completer) return;
        ++seen_.finished_by_completion;
        // Destroyed already, between Finish() and this: the lock is still held.
        if (seen_.destroyed == call) seen_.destroyed_while_locked = true;
        seen_.finishing = call;
        // gRPC may now run OnDone on its own thread: wait until it has, and for the
        // call's destruction that may follow.
        seen_.cv.wait_for(l, 5s, [&] { return seen_.done == call; });
        seen_.cv.wait_for(l, 50ms, [&] { return seen_.destroyed_while_locked; });
        seen_.finishing = nullptr;
        return;
      case Event::kDone:
        seen_.done = call;
        seen_.cv.notify_all();
        return;
      case Event::kDestroyed:
        seen_.destroyed = call;
        if (call == seen_.finishing) seen_.destroyed_while_locked = true;
        seen_.cv.notify_all();
        return;
    }
  }

  size_t EntryCount() {
    std::vector<wal::Entry> out;
    EXPECT_TRUE(wal_->Scan(0, 10000, 1 << 20, &out).ok());
    return out.size();
  }

  // Resolves every entry in the WAL as delivered, on this thread.
  void ResolveAll() {
    std::vector<wal::Entry> entries;
    ASSERT_TRUE(wal_->Scan(0, 10000, 1 << 20, &entries).ok());
    std::vector<wal::Outcome> outcomes;
    for (const wal::Entry& e : entries) {
      outcomes.push_back(wal::Outcome::Delivered(e.seq, e.record.topic, 0, 1));
    }
    waiters_.Resolve(outcomes);
  }

  kspool::testing::TempDir dir_;
  ManualClock clock_{1'700'000'000'000};
  DeliveryWaiters waiters_{&clock_};
  std::unique_ptr<DeliveryFeed> feed_;
  std::unique_ptr<wal::Wal> wal_;
  std::unique_ptr<SpoolService> service_;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<kspool::v1::Spool::Stub> stub_;
  Observed seen_;
};

TEST_F(SpoolStreamLifetime, ACallCancelledAsItsLastAnswerCompletesOutlivesTheCompletion) {
  constexpr int kStreams = 5;
  kspool::v1::SendRequest req;
  req.set_wait_for(kspool::v1::WAIT_FOR_KAFKA);
  req.add_messages()->set_topic("t");
  for (int i = 0; i < kStreams; ++i) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + 10s);
    auto stream = stub_->SendStream(&ctx);
    ASSERT_TRUE(stream->Write(req));
    ASSERT_TRUE(stream->WritesDone());  // no read pending: the completion may finish it
    ASSERT_TRUE(kspool::testing::WaitUntil(
        [&] { return waiters_.waiting() == 1 && EntryCount() == size_t(i) + 1; }, 10s));
    {
      std::lock_guard<std::mutex> l(seen_.mu);
      seen_.completer = std::this_thread::get_id();
      seen_.client = &ctx;
      // A new call may have an old one's address.
      seen_.cancelled = seen_.done = seen_.destroyed = nullptr;
    }
    ResolveAll();  // the completion runs here, held by the hook
    {
      std::lock_guard<std::mutex> l(seen_.mu);
      seen_.client = nullptr;
      seen_.completer = {};
      ASSERT_FALSE(seen_.destroyed_while_locked)
          << "stream " << i << ": OnDone destroyed the call while its completion held the lock";
    }
    kspool::v1::SendResponse resp;
    EXPECT_FALSE(stream->Read(&resp)) << "the cancelled request is not answered";
    EXPECT_EQ(stream->Finish().error_code(), grpc::StatusCode::CANCELLED);
  }
  std::lock_guard<std::mutex> l(seen_.mu);
  EXPECT_EQ(seen_.finished_by_completion, kStreams) << "the completion finished every call";
}

}  // namespace
}  // namespace kspool::agent
