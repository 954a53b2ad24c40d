# kope_add_test(NAME SOURCES... [LIBS libs...]): one GoogleTest binary, registered with CTest.
function(kope_add_test name)
  if(NOT KOPE_BUILD_TESTS)
    return()
  endif()
  cmake_parse_arguments(ARG "" "" "LIBS" ${ARGN})
  add_executable(${name} ${ARG_UNPARSED_ARGUMENTS})
  kope_target_options(${name})
  # The checkout's and build's folders come from kope_test_paths (testing/test_paths.h), not
  # from definitions: a test's object file is the same in every checkout.
  target_link_libraries(${name} PRIVATE ${ARG_LIBS} kope_test_paths GTest::gtest GTest::gtest_main)
  add_test(NAME ${name} COMMAND ${name})
  set_tests_properties(${name} PROPERTIES TIMEOUT 600)
endfunction()
