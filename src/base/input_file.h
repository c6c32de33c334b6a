// Files named by users (suites, platforms, configs, tokenizers, goldens, dumps), opened so that
// nothing waits on them: a FIFO, a device, a socket or a directory is refused before a read
// could block (the open itself does not block: O_NONBLOCK, then fstat, then blocking again).
#pragma once

#include <sys/stat.h>

#include <cstdint>
#include <string>

namespace h0::base {

// A read-only descriptor (O_CLOEXEC) of the regular file `path`, its stat in `*st` when given.
// Throws InputError naming the path: missing, unreadable, or "not a regular file (a FIFO)".
int open_regular_file(const std::string& path, struct stat* st = nullptr);

// The whole contents of the regular file `path`, at most `max_bytes` (InputError beyond).
// Throws InputError as open_regular_file does, or on a read error.
std::string read_regular_file(const std::string& path, uint64_t max_bytes = uint64_t{1} << 32);

// "a FIFO", "a directory", "a character device", ... for the mode of a non-regular file.
const char* file_type_name(mode_t mode);

}  // namespace h0::base
