// Placeholder; filled by the ops catalogue work.
#include <gtest/gtest.h>
