# Warnings and sanitizers for kope's own targets: call kope_target_options(t).
function(kope_target_options target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic -Wshadow
                         -Wnon-virtual-dtor -Wcast-align
                         -Wimplicit-fallthrough)
  if(KOPE_WERROR)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
  if(KOPE_SANITIZE)
    target_compile_options(${target} PRIVATE -fsanitize=address,undefined
                           -fno-sanitize-recover=undefined -fno-omit-frame-pointer)
    target_link_options(${target} PRIVATE -fsanitize=address,undefined)
  endif()
endfunction()
