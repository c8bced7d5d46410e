// Decoders: turn the token strings of an id sequence back into text (tokenizer.json "decoder").
#pragma once
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace strata {

struct DecodePiece {
  std::string text;
  // Added tokens are text already: the ByteLevel decoder passes them through instead of mapping their
  // characters back to bytes (as the reference does).
  bool verbatim = false;
};

class Decoder {
 public:
  virtual ~Decoder() = default;
  // Rewrites the list of pieces; the final text is their concatenation. Output is valid UTF-8: bytes
  // that do not form characters become U+FFFD.
  virtual void decode_chain(std::vector<DecodePiece>& pieces) const = 0;
};

// nullptr for a JSON null. Throws strata::Error naming an unknown or malformed type.
std::unique_ptr<Decoder> make_decoder(const nlohmann::json& j);

}  // namespace strata
