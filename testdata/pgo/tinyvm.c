/* tinyvm as one translation unit, the way SQLite and Lua (onelua.c) can
 * be built: every part is visible to the compiler's inliner at once, so
 * the inlining and layout decisions a profile steers cover the whole
 * program. blpp-bench compiles this file. */
#include "value.c"
#include "table.c"
#include "object.c"
#include "lex.c"
#include "compile.c"
#include "vm.c"
#include "lib.c"
#include "main.c"
