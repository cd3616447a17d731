# tailor_module(NAME DEPS ...): a static library from src/NAME/*.cpp that may include
# only the modules named in DEPS (the layering rule of ARCHITECTURE.md).
function(tailor_module name)
  cmake_parse_arguments(M "" "" "DEPS;EXTERNAL" ${ARGN})
  file(GLOB_RECURSE srcs CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/src/${name}/*.cpp)
  if(NOT srcs)
    # A module whose code has not landed yet still links.
    set(empty ${CMAKE_BINARY_DIR}/generated/empty_${name}.cpp)
    file(WRITE ${empty} "// module ${name} has no sources yet\n")
    set(srcs ${empty})
  endif()
  add_library(tailor_${name} STATIC ${srcs})
  target_compile_options(tailor_${name} PRIVATE ${TAILOR_WERROR_FLAGS})
  target_include_directories(tailor_${name} PUBLIC ${PROJECT_SOURCE_DIR}/src)
  set(deps)
  foreach(d ${M_DEPS})
    list(APPEND deps tailor_${d})
  endforeach()
  target_link_libraries(tailor_${name} PUBLIC ${deps} ${M_EXTERNAL})
endfunction()

# tailor_unit_test(NAME): tests/NAME/*.cpp into one GoogleTest binary linking tailor_NAME.
function(tailor_unit_test name)
  cmake_parse_arguments(T "" "" "DEPS" ${ARGN})
  file(GLOB srcs CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/tests/${name}/*.cpp)
  if(NOT srcs)
    return()
  endif()
  add_executable(test_${name} ${srcs})
  set_target_properties(test_${name} PROPERTIES UNITY_BUILD ${TAILOR_UNITY} UNITY_BUILD_BATCH_SIZE ${TAILOR_UNITY_BATCH})
  if(TAILOR_UNITY AND CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    # A test fixture in an anonymous namespace is fine in its own file; batched after
    # another file GCC flags it (-Wsubobject-linkage), which cannot matter in one binary.
    target_compile_options(test_${name} PRIVATE -Wno-subobject-linkage)
  endif()
  target_compile_options(test_${name} PRIVATE ${TAILOR_WERROR_FLAGS})
  target_link_libraries(test_${name} PRIVATE tailor_${name} ${T_DEPS} tailor_test_support GTest::gtest GTest::gtest_main)
  target_compile_definitions(test_${name} PRIVATE
    TAILOR_SOURCE_DIR="${PROJECT_SOURCE_DIR}" TAILOR_BINARY_DIR="${CMAKE_BINARY_DIR}")
  gtest_discover_tests(test_${name} DISCOVERY_TIMEOUT 60 PROPERTIES LABELS unit)
endfunction()
