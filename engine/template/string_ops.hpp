// Python's str methods, shared by the filters (trim, replace, title...) and the methods templates call
// directly (s.strip('\n'), s.split('</think>')). Whitespace and `chars` work on code points.
// Case mapping covers ASCII only: chat templates case-map role names and keywords, not user text.
#pragma once
#include <optional>
#include <string>
#include <vector>

namespace strata::jinja {

std::string py_strip(const std::string& s, const std::optional<std::string>& chars, bool left, bool right);
// maxsplit < 0: no limit. Without sep: split on whitespace runs and drop empty parts.
std::vector<std::string> py_split(const std::string& s, const std::optional<std::string>& sep, long maxsplit);
std::vector<std::string> py_rsplit(const std::string& s, const std::optional<std::string>& sep, long maxsplit);
std::string py_replace(const std::string& s, const std::string& old, const std::string& replacement, long count);
std::string py_upper(std::string s);
std::string py_lower(std::string s);
std::string py_capitalize(const std::string& s);
std::string py_title(const std::string& s);     // str.title(): a letter after a non-letter is uppercased
std::string jinja_title(const std::string& s);  // the title filter: words start after whitespace, - ( { [ <
std::vector<std::string> py_splitlines(const std::string& s, bool keepends);

}  // namespace strata::jinja
