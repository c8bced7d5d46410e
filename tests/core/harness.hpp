// Shared helpers for the engine tests: the fixture tokenizer, request building, and collecting a request's
// events until its FinishEvent.
#pragma once
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "engine/core/engine.hpp"
#include "engine/tokenizer/tokenizer.hpp"

namespace strata::test {

// The lead's byte-level BPE fixture (tests/data/models/llama): ids 0..2 are <|endoftext|>, <|im_start|>,
// <|im_end|>.
const Tokenizer& fixture_tokenizer();
constexpr TokenId kEos = 2;

std::shared_ptr<GenerationRequest> make_request(const std::string& id, std::vector<TokenId> prompt,
                                                int max_tokens);

struct Outcome {
  std::vector<TokenEvent> tokens;
  FinishEvent finish;
  bool finished = false;
  bool extra_events = false;  // something arrived after the FinishEvent
  std::string text() const;   // every token's text and the finish text, in order
  std::vector<TokenId> ids() const;
};

// Pops until the FinishEvent or the timeout; then checks briefly that nothing follows it.
Outcome collect(RequestChannel& ch, std::chrono::milliseconds timeout = std::chrono::seconds(10));

// Submits and collects one request.
Outcome run_one(Engine& e, std::shared_ptr<GenerationRequest> r,
                std::chrono::milliseconds timeout = std::chrono::seconds(10));

// Polls `pred` until it holds or the timeout passes; returns its last value.
template <class P>
bool eventually(P pred, std::chrono::milliseconds timeout = std::chrono::seconds(5)) {
  auto end = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < end) {
    if (pred()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return pred();
}

}  // namespace strata::test
