#include "base/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "base/error.h"
#include "base/input_file.h"

namespace h0::base {

std::shared_ptr<const MappedFile> MappedFile::open(const std::string& path) {
  struct stat st {};
  const int fd = open_regular_file(path, &st);  // a FIFO or a device is refused, never waited on
  size_t size = static_cast<size_t>(st.st_size);
  const std::byte* data = nullptr;
  if (size > 0) {
    void* p = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
      int err = errno;
      ::close(fd);
      throw InputError(path, std::string("cannot map: ") + std::strerror(err));
    }
    data = static_cast<const std::byte*>(p);
  }
  ::close(fd);  // the mapping keeps the file alive
  return std::shared_ptr<const MappedFile>(new MappedFile(path, data, size));
}

MappedFile::~MappedFile() {
  if (data_ != nullptr) ::munmap(const_cast<std::byte*>(data_), size_);
}

void MappedFile::prefetch(size_t offset, size_t bytes) const {
  if (data_ == nullptr || bytes == 0) return;
  const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  size_t begin = offset / page * page;
  ::madvise(const_cast<std::byte*>(data_) + begin, offset + bytes - begin, MADV_WILLNEED);
}

void MappedFile::release(size_t offset, size_t bytes) const {
  if (data_ == nullptr || bytes == 0 || offset >= size_) return;
  const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  const size_t begin = offset / page * page, end = std::min(size_, offset + bytes);
  ::madvise(const_cast<std::byte*>(data_) + begin, end - begin, MADV_DONTNEED);
}

}  // namespace h0::base
