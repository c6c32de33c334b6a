// A read-only memory map of a whole file. Opening maps the file without reading it: the cost
// is independent of the file size, and pages are read when first touched.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

namespace h0::base {

class MappedFile {
 public:
  // Maps `path` read-only. Throws InputError naming the file if it cannot be opened or mapped.
  static std::shared_ptr<const MappedFile> open(const std::string& path);

  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const std::byte* data() const { return data_; }
  size_t size() const { return size_; }
  const std::string& path() const { return path_; }

  // Hints that [offset, offset + bytes) will be read soon (madvise WILLNEED). O(1).
  void prefetch(size_t offset, size_t bytes) const;
  // Drops this process's resident pages of [offset, offset + bytes) (madvise DONTNEED): once a
  // tensor has been copied out, its file pages stop counting in the process's memory. A later
  // read of the range reads the file again (the mapping is read-only); nothing is lost.
  void release(size_t offset, size_t bytes) const;

 private:
  MappedFile(std::string path, const std::byte* data, size_t size)
      : path_(std::move(path)), data_(data), size_(size) {}

  std::string path_;
  const std::byte* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace h0::base
