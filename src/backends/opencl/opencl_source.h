// The portable kernels as one OpenCL C source (prelude_opencl.h + ../portable/kernels/*.inc),
// generated at build time from those files (CMakeLists.txt).
#pragma once

const char* h0_opencl_kernel_source();
