# The kernel libraries users link (the main build, and `halformer build-lib` through
# cmake/kernel_library/), each one static archive with its headers in
# build/include (plain C; no Halide needed to use them): every hf_<prefix>* kernel,
# the Halide runtime, ISA selection, device probing and error capture.
#   lib/libhalformer_kernels.a         CPU (three x86 ISAs each)  halformer::kernels
#   lib/libhalformer_kernels_opencl.a  OpenCL                     halformer::kernels_opencl
#   lib/libhalformer_kernels_cuda.a    CUDA                       halformer::kernels_cuda
# The archives share the runtime's (weak, identical) symbols, so they link together.
# The kernels' thread pool, also linked into the tuner's harnesses so that tuning
# times the loops models run.
add_library(halformer_thread_pool OBJECT ${HALFORMER_SOURCE_DIR}/runtime/kernels/thread_pool.c)
target_link_libraries(halformer_thread_pool PRIVATE Halide::Runtime)
set_target_properties(halformer_thread_pool PROPERTIES POSITION_INDEPENDENT_CODE ON)
# ISA selection: isa.c over the levels of the architecture compiled for.
set(kernels_c ${HALFORMER_SOURCE_DIR}/runtime/kernels)
if (CMAKE_SYSTEM_PROCESSOR MATCHES "^(aarch64|arm64)$")
  set(isa_arch isa_arm64.c)
else ()
  set(isa_arch isa_x86.c amx.c)
endif ()
list(TRANSFORM isa_arch PREPEND ${kernels_c}/)
add_library(halformer_isa STATIC ${kernels_c}/isa.c ${isa_arch} ${kernels_c}/device.c ${kernels_c}/errors.c
                                 $<TARGET_OBJECTS:halformer_thread_pool>)
target_link_libraries(halformer_isa PRIVATE halformer_runtime ${CMAKE_DL_LIBS})
set_target_properties(halformer_isa PROPERTIES POSITION_INDEPENDENT_CODE ON)

set(kernels_include ${CMAKE_BINARY_DIR}/include)
get_target_property(halide_include Halide::Runtime INTERFACE_INCLUDE_DIRECTORIES)
file(MAKE_DIRECTORY ${kernels_include})

# halformer_archive(TARGET archive-name PREFIX hf_ HEADER all-header): merges the
# kernels hf_<prefix><kernel> with the runtime into lib/lib<archive-name>.a.
# LIST names the C function listing the kernels by name (halformer_kernels.h).
function(halformer_archive target)
  cmake_parse_arguments(ARG "" "ARCHIVE;PREFIX;HEADER;TITLE;LIST" "" ${ARGN})
  set(archive ${CMAKE_BINARY_DIR}/lib/lib${ARG_ARCHIVE}.a)
  set(registry_c ${CMAKE_CURRENT_BINARY_DIR}/${ARG_ARCHIVE}_list.c)
  set(registry "/* The kernels of lib${ARG_ARCHIVE}.a by name. Generated. */\n#include \"halformer_kernels.h\"\n")
  set(entries "")
  set(kernels ${HALFORMER_KERNELS})
  if (NOT ARG_PREFIX STREQUAL "hf_") # a GPU library: without the CPU_ONLY kernels
    get_property(cpu_only GLOBAL PROPERTY HALFORMER_CPU_ONLY_KERNELS)
    if (cpu_only)
      list(REMOVE_ITEM kernels ${cpu_only})
    endif ()
  endif ()
  foreach (k IN LISTS kernels)
    set(f ${ARG_PREFIX}${k})
    string(APPEND registry "int ${f}_argv(void**);\nconst struct halide_filter_metadata_t* ${f}_metadata(void);\n")
    string(APPEND entries "    {\"${k}\", ${f}_argv, ${f}_metadata},\n")
  endforeach ()
  string(APPEND registry "const struct halformer_kernel* ${ARG_LIST}(void) {\n"
         "  static const struct halformer_kernel list[] = {\n${entries}    {0, 0, 0}};\n  return list;\n}\n")
  file(GENERATE OUTPUT ${registry_c} CONTENT "${registry}")
  add_library(${target}_list STATIC ${registry_c})
  target_include_directories(${target}_list PRIVATE ${HALFORMER_SOURCE_DIR}/runtime/kernels)
  target_link_libraries(${target}_list PRIVATE Halide::Runtime)
  set_target_properties(${target}_list PROPERTIES POSITION_INDEPENDENT_CODE ON)
  get_property(header_dir GLOBAL PROPERTY HALFORMER_KERNEL_HEADER_DIR)
  set(mri "CREATE ${archive}\nADDLIB $<TARGET_FILE:halformer_isa>\nADDLIB $<TARGET_FILE:halformer_runtime>\n")
  string(APPEND mri "ADDLIB $<TARGET_FILE:${target}_list>\n")
  set(deps halformer_isa halformer_runtime ${target}_list)
  set(copies "")
  set(all "/* ${ARG_TITLE} Generated. */\n#include \"halformer_kernels.h\"\n")
  foreach (k IN LISTS kernels)
    set(lib ${ARG_PREFIX}${k})
    string(APPEND mri "ADDLIB $<TARGET_FILE:${lib}>\n")
    list(APPEND deps ${lib})
    list(APPEND copies COMMAND ${CMAKE_COMMAND} -E copy_if_different ${header_dir}/${lib}.h ${kernels_include}/${lib}.h)
    string(APPEND all "#include \"${lib}.h\"\n")
  endforeach ()
  string(APPEND mri "SAVE\nEND\n")
  file(GENERATE OUTPUT ${CMAKE_CURRENT_BINARY_DIR}/${ARG_ARCHIVE}.mri CONTENT "${mri}")
  file(GENERATE OUTPUT ${kernels_include}/${ARG_HEADER} CONTENT "${all}")
  add_custom_command(
    OUTPUT ${archive}
    COMMAND ${CMAKE_COMMAND} -E rm -f ${archive}
    COMMAND sh -c "${CMAKE_AR} -M < ${CMAKE_CURRENT_BINARY_DIR}/${ARG_ARCHIVE}.mri"
    COMMAND ${CMAKE_RANLIB} ${archive}
    COMMAND ${CMAKE_COMMAND} -E copy_if_different ${HALFORMER_SOURCE_DIR}/runtime/kernels/halformer_kernels.h
            ${halide_include}/HalideRuntime.h ${halide_include}/HalideRuntimeCuda.h
            ${halide_include}/HalideRuntimeOpenCL.h ${kernels_include}/
    ${copies}
    DEPENDS ${deps} ${CMAKE_CURRENT_BINARY_DIR}/${ARG_ARCHIVE}.mri ${HALFORMER_SOURCE_DIR}/runtime/kernels/halformer_kernels.h
    COMMENT "Merging every kernel into lib${ARG_ARCHIVE}.a"
    VERBATIM)
  add_custom_target(${target}_archive ALL DEPENDS ${archive})
  add_library(${target} INTERFACE)
  add_dependencies(${target} ${target}_archive)
  target_include_directories(${target} INTERFACE ${kernels_include})
  target_link_libraries(${target} INTERFACE ${archive} Threads::Threads ${CMAKE_DL_LIBS})
endfunction()

