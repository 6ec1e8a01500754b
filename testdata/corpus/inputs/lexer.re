#include <stdio.h>
/*!re2c re2c:yyfill:enable = 0; re2c:define:YYCTYPE = char; */
static int lex(const char *YYCURSOR) {
    const char *YYMARKER;
    for (;;) {
    /*!re2c
        [0-9]+ ("." [0-9]*)? ([eE] [+-]? [0-9]+)? { return 1; }
        "0x" [0-9a-fA-F]+ { return 2; }
        [a-zA-Z_][a-zA-Z_0-9]* { return 3; }
        "\"" ([^"\\\n] | "\\" [^\n])* "\"" { return 4; }
        "==" | "!=" | "<=" | ">=" | "&&" | "||" { return 5; }
        [ \t\n]+ { continue; }
        "\x00" { return 0; }
        * { return -1; }
    */
    }
}
int main(int argc, char **argv) { return argc > 1 ? lex(argv[1]) : 0; }
