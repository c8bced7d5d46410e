// The engine as the routes see it. An interface so that route tests can drive the HTTP layer with a
// scripted engine; production wraps the real Engine (EngineAdapter).
#pragma once
#include <memory>

#include "engine/core/engine.hpp"

namespace strata {

class EnginePort {
 public:
  virtual ~EnginePort() = default;
  // Same contract as Engine::submit: on Accepted the channel receives exactly one FinishEvent, last.
  virtual SubmitResult submit(std::shared_ptr<GenerationRequest> req, std::shared_ptr<RequestChannel> channel) = 0;
  virtual void start_draining() = 0;
  virtual bool idle() const = 0;
  virtual bool healthy() const = 0;
  virtual bool ready() const = 0;
  virtual EngineStats stats() const = 0;
};

class EngineAdapter : public EnginePort {
 public:
  explicit EngineAdapter(Engine& engine) : engine_(engine) {}
  SubmitResult submit(std::shared_ptr<GenerationRequest> req, std::shared_ptr<RequestChannel> channel) override {
    return engine_.submit(std::move(req), std::move(channel));
  }
  void start_draining() override { engine_.start_draining(); }
  bool idle() const override { return engine_.idle(); }
  bool healthy() const override { return engine_.healthy(); }
  bool ready() const override { return engine_.ready(); }
  EngineStats stats() const override { return engine_.stats(); }

 private:
  Engine& engine_;
};

}  // namespace strata
