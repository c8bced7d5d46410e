// The safetensors container: an 8-byte little-endian header length, a JSON header naming each tensor's
// dtype, shape and [begin, end) byte range, then the data. Every range is checked against the file before a
// view is handed out, so a truncated or corrupt file is an error here and never a read past the mapping.
#pragma once
#include <vector>

#include "engine/model/mapped_file.hpp"
#include "engine/model/weights.hpp"

namespace strata {

// Views into `file` for every tensor of its header. Throws strata::Error "<path>: <problem>".
std::vector<TensorView> parse_safetensors(const MappedFile& file);

}  // namespace strata
