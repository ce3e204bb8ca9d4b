# The tuner's measuring side, once the generators and kernels exist: search
# spaces, one harness per kernel, and the paths `halformer tune` drives.
set(tuner_dir ${CMAKE_SOURCE_DIR}/tuner)
set(share ${CMAKE_BINARY_DIR}/share/halformer)
get_target_property(halide_include Halide::Runtime INTERFACE_INCLUDE_DIRECTORIES)

# One measuring harness per kernel (linked with each candidate by the tuner): the
# kernel problems (common/) compiled once, and harness.cpp naming its kernel.
foreach (k IN LISTS HALFORMER_KERNELS)
  add_library(tuner_harness_${k} STATIC ${tuner_dir}/harness.cpp $<TARGET_OBJECTS:halformer_problems_objects>
                                        $<TARGET_OBJECTS:halformer_thread_pool>)
  target_include_directories(tuner_harness_${k} PRIVATE ${CMAKE_SOURCE_DIR}/runtime/kernels)
  target_compile_definitions(tuner_harness_${k} PRIVATE HF_KERNEL_NAME="${k}")
  target_link_libraries(tuner_harness_${k} PRIVATE halformer::common Halide::Runtime)
  list(APPEND harnesses tuner_harness_${k})
endforeach ()
add_custom_target(tuner_harnesses ALL DEPENDS ${harnesses})

# The BLAS baselines for `compare` at the kernels' GEMM shapes: OpenBLAS sgemm,
# oneDNN's int8 GEMM and oneDNN's matmul of the kernel's type.
find_package(BLAS REQUIRED)
add_executable(blas_harness ${tuner_dir}/blas_harness.cpp)
find_package(OpenMP REQUIRED)
target_link_libraries(blas_harness PRIVATE halformer::common halformer_onednn_matmul BLAS::BLAS OpenMP::OpenMP_CXX
                                           nlohmann_json::nlohmann_json)

# Where everything is, for `halformer tune`.
file(GENERATE OUTPUT ${share}/tuner_paths.json CONTENT "{
  \"generator\": \"$<TARGET_FILE:halformer.generators>\",
  \"cxx\": \"${CMAKE_CXX_COMPILER}\",
  \"harness_dir\": \"${CMAKE_BINARY_DIR}/lib\",
  \"runtime_lib\": \"$<TARGET_FILE:halformer_runtime>\",
  \"knob_file\": \"${HALFORMER_DEFAULT_KNOB_FILE}\",
  \"work_dir\": \"${CMAKE_BINARY_DIR}/tuning\",
  \"isa_lib\": \"$<TARGET_FILE:halformer_isa>\",
  \"kernel_header\": \"${CMAKE_SOURCE_DIR}/runtime/kernels/halformer_kernels.h\",
  \"runtime_header\": \"${halide_include}/HalideRuntime.h\",
  \"autoscheduler_dir\": \"$<TARGET_FILE_DIR:Halide::Adams2019>\",
  \"blas_harness\": \"$<TARGET_FILE:blas_harness>\",
  \"gpu_knob_file\": \"${HALFORMER_GPU_KNOB_FILE}\",
  \"arm64_knob_file\": \"${HALFORMER_ARM64_KNOB_FILE}\",
  \"build_knob_file\": \"${HALFORMER_BUILD_KNOB_FILE}\",
  \"knob_choice\": [\"$<TARGET_FILE:halformer_choose_knobs>\", \"${HALFORMER_TUNED_KNOB_DIR}\",
                   \"${HALFORMER_DEFAULT_KNOB_FILE}\", \"${HALFORMER_SCHEDULE_DB}\", \"${share}/knob_spaces.json\",
                   \"${share}/kernels.json\"],
  \"source_dir\": \"${CMAKE_SOURCE_DIR}\",
  \"cmake\": \"${CMAKE_COMMAND}\",
  \"make_program\": \"${CMAKE_MAKE_PROGRAM}\",
  \"halide_dir\": \"$<TARGET_FILE_DIR:Halide::Halide>/cmake/Halide\"
}
")
