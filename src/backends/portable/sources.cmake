# The portable kernels' host side, compiled into every device plugin (cuda, opencl) and built
# against the plugin ABI alone: include()d by their CMakeLists after setting `portable`.
set(H0_PORTABLE_SOURCES
  ${portable}/device_ops.cc
  ${portable}/operands.cc
  ${portable}/op_operands.cc
  ${portable}/ops_dense.cc
  ${portable}/ops_attention.cc
  ${portable}/ops_moe.cc
  ${portable}/ops_quant.cc
  ${portable}/ops_linear_attention.cc
  ${portable}/rope_frequencies.cc)
