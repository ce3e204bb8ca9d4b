# The runtime tests' sources: the x86 build's and the AArch64 build's (cmake/arm64).
set(runtime_test_sources
  ${CMAKE_CURRENT_LIST_DIR}/parity_test.cpp
  ${CMAKE_CURRENT_LIST_DIR}/bad_input_test.cpp
  ${CMAKE_CURRENT_LIST_DIR}/binding_test.cpp
  ${CMAKE_CURRENT_LIST_DIR}/profile_test.cpp
  ${CMAKE_CURRENT_LIST_DIR}/grouping_test.cpp
  ${CMAKE_CURRENT_LIST_DIR}/int8_test.cpp
  ${CMAKE_CURRENT_LIST_DIR}/bf16_test.cpp
  ${CMAKE_CURRENT_LIST_DIR}/kv_cache_test.cpp
  ${CMAKE_CURRENT_LIST_DIR}/concurrency_test.cpp
  ${CMAKE_CURRENT_LIST_DIR}/marian_config_test.cpp
  ${CMAKE_CURRENT_LIST_DIR}/decoding_options_test.cpp)
