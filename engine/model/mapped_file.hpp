// A read-only memory mapping of one file, unmapped on destruction. Tensor views point into it, so the owner
// (Checkpoint) must outlive every view.
#pragma once
#include <cstddef>
#include <string>

namespace strata {

class MappedFile {
 public:
  // Throws strata::Error naming the path when it cannot be opened or mapped.
  explicit MappedFile(const std::string& path);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const std::string& path() const { return path_; }
  const unsigned char* data() const { return data_; }
  size_t size() const { return size_; }

 private:
  std::string path_;
  const unsigned char* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace strata
