/* The lexer: one token at a time, on demand. */
#include <string.h>

#include "vm.h"

void lexer_init(Lexer *lx, const char *src)
{
	lx->src = src;
	lx->cur = src;
	lx->line = 1;
}

static int is_alpha(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

static int is_digit(char c)
{
	return c >= '0' && c <= '9';
}

static Token make(Lexer *lx, TokenKind k, const char *start)
{
	Token t;
	t.kind = k;
	t.start = start;
	t.len = (int)(lx->cur - start);
	t.line = lx->line;
	t.ival = 0;
	return t;
}

static Token error_token(Lexer *lx, const char *msg)
{
	Token t;
	t.kind = T_ERROR;
	t.start = msg;
	t.len = (int)strlen(msg);
	t.line = lx->line;
	t.ival = 0;
	return t;
}

static void skip_space(Lexer *lx)
{
	for (;;) {
		char c = *lx->cur;
		switch (c) {
		case '\n':
			lx->line++;
			/* fall through */
		case ' ':
		case '\t':
		case '\r':
			lx->cur++;
			break;
		case '#':
			while (*lx->cur && *lx->cur != '\n')
				lx->cur++;
			break;
		default:
			return;
		}
	}
}

struct keyword {
	const char *word;
	TokenKind kind;
};

static const struct keyword keywords[] = {
	{"and", T_AND},       {"break", T_BREAK}, {"continue", T_CONTINUE}, {"else", T_ELSE},
	{"false", T_FALSE},   {"fn", T_FN},       {"for", T_FOR},           {"if", T_IF},
	{"let", T_LET},       {"nil", T_NIL},     {"not", T_NOT},           {"or", T_OR},
	{"print", T_PRINT},   {"return", T_RETURN}, {"true", T_TRUE},       {"while", T_WHILE},
};

static TokenKind ident_kind(const char *s, int len)
{
	for (size_t i = 0; i < sizeof keywords / sizeof keywords[0]; i++) {
		const char *w = keywords[i].word;
		if ((int)strlen(w) == len && memcmp(w, s, (size_t)len) == 0)
			return keywords[i].kind;
	}
	return T_IDENT;
}

static Token lex_number(Lexer *lx, const char *start)
{
	int64_t v = 0;
	while (is_digit(*lx->cur)) {
		v = v * 10 + (*lx->cur - '0');
		lx->cur++;
	}
	Token t = make(lx, T_INT, start);
	t.ival = v;
	return t;
}

static Token lex_string(Lexer *lx, const char *start)
{
	while (*lx->cur && *lx->cur != '"') {
		if (*lx->cur == '\n')
			lx->line++;
		if (*lx->cur == '\\' && lx->cur[1])
			lx->cur++;
		lx->cur++;
	}
	if (!*lx->cur)
		return error_token(lx, "unterminated string");
	lx->cur++;
	return make(lx, T_STRING, start);
}

static Token two(Lexer *lx, const char *start, char next, TokenKind yes, TokenKind no)
{
	if (*lx->cur == next) {
		lx->cur++;
		return make(lx, yes, start);
	}
	return make(lx, no, start);
}

Token lexer_next(Lexer *lx)
{
	skip_space(lx);
	const char *start = lx->cur;
	char c = *lx->cur;
	if (c == '\0')
		return make(lx, T_EOF, start);
	lx->cur++;
	if (is_alpha(c)) {
		while (is_alpha(*lx->cur) || is_digit(*lx->cur))
			lx->cur++;
		return make(lx, ident_kind(start, (int)(lx->cur - start)), start);
	}
	if (is_digit(c)) {
		lx->cur--;
		return lex_number(lx, start);
	}
	switch (c) {
	case '(':
		return make(lx, T_LPAREN, start);
	case ')':
		return make(lx, T_RPAREN, start);
	case '{':
		return make(lx, T_LBRACE, start);
	case '}':
		return make(lx, T_RBRACE, start);
	case '[':
		return make(lx, T_LBRACKET, start);
	case ']':
		return make(lx, T_RBRACKET, start);
	case ',':
		return make(lx, T_COMMA, start);
	case ';':
		return make(lx, T_SEMI, start);
	case ':':
		return make(lx, T_COLON, start);
	case '.':
		return make(lx, T_DOT, start);
	case '+':
		return make(lx, T_PLUS, start);
	case '-':
		return make(lx, T_MINUS, start);
	case '*':
		return make(lx, T_STAR, start);
	case '/':
		return make(lx, T_SLASH, start);
	case '%':
		return make(lx, T_PERCENT, start);
	case '=':
		return two(lx, start, '=', T_EQ, T_ASSIGN);
	case '!':
		if (*lx->cur == '=') {
			lx->cur++;
			return make(lx, T_NE, start);
		}
		return error_token(lx, "'!' alone (use not)");
	case '<':
		return two(lx, start, '=', T_LE, T_LT);
	case '>':
		return two(lx, start, '=', T_GE, T_GT);
	case '"':
		return lex_string(lx, start);
	}
	return error_token(lx, "unexpected character");
}

const char *token_name(TokenKind k)
{
	static const char *names[] = {
		"end of input", "error", "identifier", "integer", "string",
		"'('", "')'", "'{'", "'}'", "'['", "']'",
		"','", "';'", "':'", "'.'",
		"'+'", "'-'", "'*'", "'/'", "'%'",
		"'='", "'=='", "'!='", "'<'", "'<='", "'>'", "'>='",
		"and", "or", "not", "fn", "let", "if", "else", "while", "for",
		"return", "print", "true", "false", "nil", "break", "continue",
	};
	if ((size_t)k < sizeof names / sizeof names[0])
		return names[k];
	return "?";
}
