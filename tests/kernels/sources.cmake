# The kernel tests' sources: the x86 build's and the AArch64
# build's (tests/arm64) kernel tests.
set(kernel_test_sources
  ${CMAKE_CURRENT_LIST_DIR}/main.cpp
  ${CMAKE_CURRENT_LIST_DIR}/attention_test.cpp
  ${CMAKE_CURRENT_LIST_DIR}/batch_invariance_test.cpp
  ${CMAKE_CURRENT_LIST_DIR}/embedding_test.cpp
  ${CMAKE_CURRENT_LIST_DIR}/errors_test.cpp
  ${CMAKE_CURRENT_LIST_DIR}/ffn_test.cpp
  ${CMAKE_CURRENT_LIST_DIR}/beam_candidates_test.cpp
  ${CMAKE_CURRENT_LIST_DIR}/greedy_pick_test.cpp
  ${CMAKE_CURRENT_LIST_DIR}/sample_pick_test.cpp
  ${CMAKE_CURRENT_LIST_DIR}/problems_test.cpp
  ${CMAKE_CURRENT_LIST_DIR}/projections_test.cpp
  ${CMAKE_CURRENT_LIST_DIR}/registry_test.cpp
  ${CMAKE_CURRENT_LIST_DIR}/rows_test.cpp)
