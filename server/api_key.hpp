// API-key check for --api-key / --api-key-file. The comparison takes the same time whatever the key's
// content or length, so response timing does not reveal how much of a guessed key was right.
#pragma once
#include <string>
#include <string_view>
#include <vector>

namespace strata {

bool constant_time_equal(std::string_view a, std::string_view b);
// The key from "Authorization: Bearer KEY" (case-insensitive scheme) or "x-api-key: KEY"; "" if none.
std::string presented_key(const std::string& authorization, const std::string& x_api_key);
// True when `keys` is empty (auth off) or `presented` equals one of them. Every key is compared.
bool key_accepted(const std::vector<std::string>& keys, const std::string& presented);

}  // namespace strata
