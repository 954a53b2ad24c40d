# Warnings and sanitizers for kope's own targets: call kope_target_options(t).
function(kope_target_options target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic -Wshadow
                         -Wnon-virtual-dtor -Wcast-align
                         -Wimplicit-fallthrough)
  if(KOPE_WERROR)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
  if(KOPE_SANITIZE)
    # GCC 12's flow analysis reports false "maybe uninitialized" inside libstdc++
    # (std::regex, std::function) once ASan instruments it; the release build keeps the warning.
    target_compile_options(${target} PRIVATE -Wno-maybe-uninitialized)
    target_compile_options(${target} PRIVATE -fsanitize=address,undefined
                           -fno-sanitize-recover=undefined -fno-omit-frame-pointer)
    target_link_options(${target} PRIVATE -fsanitize=address,undefined)
  endif()
endfunction()
