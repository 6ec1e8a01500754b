/* The compiler: a Pratt parser that emits stack bytecode as it goes, one
 * pass, no syntax tree. Locals live in stack slots (slot 0 holds the
 * called function), globals in the VM's global table by name. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vm.h"

#define MAX_LOCALS 200
#define MAX_JUMPS 64

typedef struct {
	const char *name;
	int len;
	int depth;
} Local;

typedef struct Loop {
	struct Loop *outer;
	int depth;         /* scope depth of the loop's body */
	int cont;          /* where continue goes, or -1 when patched later */
	int breaks[MAX_JUMPS];
	int nbreaks;
	int conts[MAX_JUMPS];
	int nconts;
} Loop;

typedef struct Scope {
	struct Scope *outer;
	ObjFunc *fn;
	Local locals[MAX_LOCALS];
	int nlocals;
	int depth;
	Loop *loop;
} Scope;

typedef struct {
	Lexer lx;
	Token cur, prev;
	Scope *sc;
	int errors;
} Parser;

typedef enum {
	P_NONE, P_ASSIGN, P_OR, P_AND, P_EQ, P_CMP, P_TERM, P_FACTOR, P_UNARY, P_CALL,
} Prec;

static void expression(Parser *p);
static void statement(Parser *p);
static void block(Parser *p);
static void parse_prec(Parser *p, Prec prec);

/* Diagnostics. */

static void error_at(Parser *p, Token *t, const char *msg)
{
	if (p->errors++ > 10)
		return;
	if (t->kind == T_EOF)
		fprintf(stderr, "line %d: at end: %s\n", t->line, msg);
	else if (t->kind == T_ERROR)
		fprintf(stderr, "line %d: %.*s\n", t->line, t->len, t->start);
	else
		fprintf(stderr, "line %d: at '%.*s': %s\n", t->line, t->len, t->start, msg);
}

static void advance(Parser *p)
{
	p->prev = p->cur;
	for (;;) {
		p->cur = lexer_next(&p->lx);
		if (p->cur.kind != T_ERROR)
			break;
		error_at(p, &p->cur, "");
	}
}

static int check(Parser *p, TokenKind k)
{
	return p->cur.kind == k;
}

static int match(Parser *p, TokenKind k)
{
	if (!check(p, k))
		return 0;
	advance(p);
	return 1;
}

static void expect(Parser *p, TokenKind k, const char *what)
{
	if (check(p, k)) {
		advance(p);
		return;
	}
	char msg[96];
	snprintf(msg, sizeof msg, "expected %s %s", token_name(k), what);
	error_at(p, &p->cur, msg);
}

/* Emitting. */

static Chunk *chunk(Parser *p)
{
	return &p->sc->fn->chunk;
}

static void emit(Parser *p, uint8_t b)
{
	chunk_write(chunk(p), b, p->prev.line);
}

static void emit2(Parser *p, uint8_t a, uint8_t b)
{
	emit(p, a);
	emit(p, b);
}

static void emit16(Parser *p, int v)
{
	emit(p, (uint8_t)(v >> 8));
	emit(p, (uint8_t)v);
}

static int make_const(Parser *p, Value v)
{
	int k = chunk_const(chunk(p), v);
	if (k > 0xffff)
		error_at(p, &p->prev, "too many constants in one function");
	return k;
}

static void emit_const(Parser *p, Value v)
{
	emit(p, OP_CONST);
	emit16(p, make_const(p, v));
}

static int emit_jump(Parser *p, uint8_t op)
{
	emit(p, op);
	emit16(p, 0xffff);
	return chunk(p)->len - 2;
}

static void patch_jump_to(Parser *p, int at, int target)
{
	int dist = target - (at + 2);
	if (dist > 0xffff || dist < 0)
		error_at(p, &p->prev, "jump too far");
	chunk(p)->code[at] = (uint8_t)(dist >> 8);
	chunk(p)->code[at + 1] = (uint8_t)dist;
}

static void patch_jump(Parser *p, int at)
{
	patch_jump_to(p, at, chunk(p)->len);
}

static void emit_loop(Parser *p, int start)
{
	emit(p, OP_LOOP);
	int dist = chunk(p)->len - start + 2;
	if (dist > 0xffff)
		error_at(p, &p->prev, "loop body too large");
	emit16(p, dist);
}

/* Scopes and variables. */

static void begin_scope(Parser *p)
{
	p->sc->depth++;
}

/* pop_locals_above emits the pops that leave the scopes deeper than
 * depth, without forgetting the locals (break and continue need that). */
static void pop_locals_above(Parser *p, int depth)
{
	Scope *sc = p->sc;
	for (int i = sc->nlocals - 1; i >= 0 && sc->locals[i].depth > depth; i--)
		emit(p, OP_POP);
}

static void end_scope(Parser *p)
{
	Scope *sc = p->sc;
	sc->depth--;
	while (sc->nlocals > 0 && sc->locals[sc->nlocals - 1].depth > sc->depth) {
		emit(p, OP_POP);
		sc->nlocals--;
	}
}

static int add_local(Parser *p, const char *name, int len)
{
	Scope *sc = p->sc;
	if (sc->nlocals == MAX_LOCALS) {
		error_at(p, &p->prev, "too many locals in one function");
		return 0;
	}
	for (int i = sc->nlocals - 1; i >= 0 && sc->locals[i].depth == sc->depth; i--) {
		Local *l = &sc->locals[i];
		if (l->len == len && memcmp(l->name, name, (size_t)len) == 0)
			error_at(p, &p->prev, "a variable of that name is already in this scope");
	}
	Local *l = &sc->locals[sc->nlocals++];
	l->name = name;
	l->len = len;
	l->depth = sc->depth;
	return sc->nlocals - 1;
}

static int resolve_local(Scope *sc, const char *name, int len)
{
	for (int i = sc->nlocals - 1; i >= 0; i--) {
		Local *l = &sc->locals[i];
		if (l->len == len && memcmp(l->name, name, (size_t)len) == 0)
			return i;
	}
	return -1;
}

static int name_const(Parser *p, Token *t)
{
	return make_const(p, obj_value(intern(t->start, (size_t)t->len)));
}

/* Expressions. */

static void number(Parser *p, int can_assign)
{
	(void)can_assign;
	emit_const(p, int_value(p->prev.ival));
}

static void string(Parser *p, int can_assign)
{
	(void)can_assign;
	const char *s = p->prev.start + 1;
	int n = p->prev.len - 2;
	char *buf = xrealloc(NULL, (size_t)n + 1);
	int k = 0;
	for (int i = 0; i < n; i++) {
		char c = s[i];
		if (c == '\\' && i + 1 < n) {
			c = s[++i];
			switch (c) {
			case 'n':
				c = '\n';
				break;
			case 't':
				c = '\t';
				break;
			default:
				break;
			}
		}
		buf[k++] = c;
	}
	emit_const(p, obj_value(intern(buf, (size_t)k)));
	free(buf);
}

static void variable(Parser *p, int can_assign)
{
	Token name = p->prev;
	int slot = resolve_local(p->sc, name.start, name.len);
	if (can_assign && match(p, T_ASSIGN)) {
		expression(p);
		if (slot >= 0) {
			emit2(p, OP_SET_LOCAL, (uint8_t)slot);
		} else {
			emit(p, OP_SET_GLOBAL);
			emit16(p, name_const(p, &name));
		}
		return;
	}
	if (slot >= 0) {
		emit2(p, OP_GET_LOCAL, (uint8_t)slot);
	} else {
		emit(p, OP_GET_GLOBAL);
		emit16(p, name_const(p, &name));
	}
}

static void grouping(Parser *p, int can_assign)
{
	(void)can_assign;
	expression(p);
	expect(p, T_RPAREN, "after the expression");
}

static void unary(Parser *p, int can_assign)
{
	(void)can_assign;
	TokenKind op = p->prev.kind;
	parse_prec(p, P_UNARY);
	emit(p, op == T_MINUS ? OP_NEG : OP_NOT);
}

static void literal(Parser *p, int can_assign)
{
	(void)can_assign;
	switch (p->prev.kind) {
	case T_TRUE:
		emit(p, OP_TRUE);
		break;
	case T_FALSE:
		emit(p, OP_FALSE);
		break;
	default:
		emit(p, OP_NIL);
		break;
	}
}

static void list_literal(Parser *p, int can_assign)
{
	(void)can_assign;
	int n = 0;
	if (!check(p, T_RBRACKET)) {
		do {
			if (check(p, T_RBRACKET))
				break;
			expression(p);
			if (++n > 255)
				error_at(p, &p->prev, "too many elements in a list literal");
		} while (match(p, T_COMMA));
	}
	expect(p, T_RBRACKET, "after the list's elements");
	emit2(p, OP_LIST, (uint8_t)n);
}

static void map_literal(Parser *p, int can_assign)
{
	(void)can_assign;
	int n = 0;
	if (!check(p, T_RBRACE)) {
		do {
			if (check(p, T_RBRACE))
				break;
			expression(p);
			expect(p, T_COLON, "between a key and its value");
			expression(p);
			if (++n > 255)
				error_at(p, &p->prev, "too many entries in a map literal");
		} while (match(p, T_COMMA));
	}
	expect(p, T_RBRACE, "after the map's entries");
	emit2(p, OP_MAP, (uint8_t)n);
}

static void function_body(Parser *p, ObjString *name);

static void fn_literal(Parser *p, int can_assign)
{
	(void)can_assign;
	function_body(p, intern_cstr("<anon>"));
}

static Prec infix_prec(TokenKind k)
{
	switch (k) {
	case T_OR:
		return P_OR;
	case T_AND:
		return P_AND;
	case T_EQ:
	case T_NE:
		return P_EQ;
	case T_LT:
	case T_LE:
	case T_GT:
	case T_GE:
		return P_CMP;
	case T_PLUS:
	case T_MINUS:
		return P_TERM;
	case T_STAR:
	case T_SLASH:
	case T_PERCENT:
		return P_FACTOR;
	case T_LPAREN:
	case T_LBRACKET:
		return P_CALL;
	default:
		return P_NONE;
	}
}

/* small_const_at reports whether the code from at to the end is exactly
 * one OP_CONST of an integer that fits a signed byte. */
static int small_const_at(Parser *p, int at, int64_t *v)
{
	Chunk *c = chunk(p);
	if (c->len != at + 3 || c->code[at] != OP_CONST)
		return 0;
	Value k = c->consts[(c->code[at + 1] << 8) | c->code[at + 2]];
	if (k.kind != V_INT || k.as.i < -127 || k.as.i > 127)
		return 0;
	*v = k.as.i;
	return 1;
}

static void binary(Parser *p, int can_assign)
{
	(void)can_assign;
	TokenKind op = p->prev.kind;
	int at = chunk(p)->len;
	parse_prec(p, (Prec)(infix_prec(op) + 1));
	int64_t imm;
	if ((op == T_PLUS || op == T_MINUS) && small_const_at(p, at, &imm)) {
		/* x + 1 and x - 1 become one instruction with the constant inline */
		chunk(p)->len = at;
		emit2(p, OP_ADD_INT, (uint8_t)(int8_t)(op == T_PLUS ? imm : -imm));
		return;
	}
	switch (op) {
	case T_PLUS:
		emit(p, OP_ADD);
		break;
	case T_MINUS:
		emit(p, OP_SUB);
		break;
	case T_STAR:
		emit(p, OP_MUL);
		break;
	case T_SLASH:
		emit(p, OP_DIV);
		break;
	case T_PERCENT:
		emit(p, OP_MOD);
		break;
	case T_EQ:
		emit(p, OP_EQ);
		break;
	case T_NE:
		emit(p, OP_NE);
		break;
	case T_LT:
		emit(p, OP_LT);
		break;
	case T_LE:
		emit(p, OP_LE);
		break;
	case T_GT:
		emit(p, OP_GT);
		break;
	case T_GE:
		emit(p, OP_GE);
		break;
	default:
		break;
	}
}

static void and_(Parser *p, int can_assign)
{
	(void)can_assign;
	int end = emit_jump(p, OP_JUMP_FALSE_KEEP);
	emit(p, OP_POP);
	parse_prec(p, P_AND + 1);
	patch_jump(p, end);
}

static void or_(Parser *p, int can_assign)
{
	(void)can_assign;
	int end = emit_jump(p, OP_JUMP_TRUE_KEEP);
	emit(p, OP_POP);
	parse_prec(p, P_OR + 1);
	patch_jump(p, end);
}

static void call(Parser *p, int can_assign)
{
	(void)can_assign;
	int argc = 0;
	if (!check(p, T_RPAREN)) {
		do {
			expression(p);
			if (++argc > 32)
				error_at(p, &p->prev, "too many arguments");
		} while (match(p, T_COMMA));
	}
	expect(p, T_RPAREN, "after the arguments");
	emit2(p, OP_CALL, (uint8_t)argc);
}

static void index_(Parser *p, int can_assign)
{
	expression(p);
	expect(p, T_RBRACKET, "after the index");
	if (can_assign && match(p, T_ASSIGN)) {
		expression(p);
		emit(p, OP_SET_INDEX);
		return;
	}
	emit(p, OP_INDEX);
}

static int prefix(Parser *p, TokenKind k, int can_assign)
{
	switch (k) {
	case T_INT:
		number(p, can_assign);
		return 1;
	case T_STRING:
		string(p, can_assign);
		return 1;
	case T_IDENT:
		variable(p, can_assign);
		return 1;
	case T_LPAREN:
		grouping(p, can_assign);
		return 1;
	case T_MINUS:
	case T_NOT:
		unary(p, can_assign);
		return 1;
	case T_TRUE:
	case T_FALSE:
	case T_NIL:
		literal(p, can_assign);
		return 1;
	case T_LBRACKET:
		list_literal(p, can_assign);
		return 1;
	case T_LBRACE:
		map_literal(p, can_assign);
		return 1;
	case T_FN:
		fn_literal(p, can_assign);
		return 1;
	default:
		return 0;
	}
}

static void infix(Parser *p, TokenKind k, int can_assign)
{
	switch (k) {
	case T_AND:
		and_(p, can_assign);
		break;
	case T_OR:
		or_(p, can_assign);
		break;
	case T_LPAREN:
		call(p, can_assign);
		break;
	case T_LBRACKET:
		index_(p, can_assign);
		break;
	default:
		binary(p, can_assign);
		break;
	}
}

static void parse_prec(Parser *p, Prec prec)
{
	advance(p);
	int can_assign = prec <= P_ASSIGN;
	if (!prefix(p, p->prev.kind, can_assign)) {
		error_at(p, &p->prev, "expected an expression");
		return;
	}
	while (prec <= infix_prec(p->cur.kind)) {
		advance(p);
		infix(p, p->prev.kind, can_assign);
	}
	if (can_assign && match(p, T_ASSIGN))
		error_at(p, &p->prev, "cannot assign to this");
}

static void expression(Parser *p)
{
	parse_prec(p, P_ASSIGN);
}

/* Functions. */

static void function_body(Parser *p, ObjString *name)
{
	Scope sc;
	memset(&sc, 0, sizeof sc);
	sc.outer = p->sc;
	sc.fn = new_func(name);
	sc.depth = 1;
	p->sc = &sc;
	add_local(p, "", 0); /* slot 0: the function itself */
	expect(p, T_LPAREN, "after the function's name");
	if (!check(p, T_RPAREN)) {
		do {
			expect(p, T_IDENT, "(a parameter name)");
			add_local(p, p->prev.start, p->prev.len);
			if (++sc.fn->arity > 32)
				error_at(p, &p->prev, "too many parameters");
		} while (match(p, T_COMMA));
	}
	expect(p, T_RPAREN, "after the parameters");
	expect(p, T_LBRACE, "before the function's body");
	block(p);
	emit(p, OP_NIL);
	emit(p, OP_RETURN);
	p->sc = sc.outer;
	emit_const(p, obj_value(sc.fn));
}

static void fn_declaration(Parser *p)
{
	expect(p, T_IDENT, "(the function's name)");
	Token name = p->prev;
	if (p->sc->depth > 0) {
		/* a local function: functions see no enclosing locals, so
		 * only a global function can call itself by name */
		add_local(p, name.start, name.len);
		function_body(p, intern(name.start, (size_t)name.len));
		return;
	}
	function_body(p, intern(name.start, (size_t)name.len));
	emit(p, OP_DEF_GLOBAL);
	emit16(p, name_const(p, &name));
}

/* Statements. */

static void let_declaration(Parser *p)
{
	expect(p, T_IDENT, "(the variable's name)");
	Token name = p->prev;
	if (match(p, T_ASSIGN))
		expression(p);
	else
		emit(p, OP_NIL);
	expect(p, T_SEMI, "after the declaration");
	if (p->sc->depth > 0) {
		add_local(p, name.start, name.len);
		return;
	}
	emit(p, OP_DEF_GLOBAL);
	emit16(p, name_const(p, &name));
}

static void block(Parser *p)
{
	while (!check(p, T_RBRACE) && !check(p, T_EOF))
		statement(p);
	expect(p, T_RBRACE, "at the end of the block");
}

static void scoped_block(Parser *p)
{
	expect(p, T_LBRACE, "to open a block");
	begin_scope(p);
	block(p);
	end_scope(p);
}

static void if_statement(Parser *p)
{
	expression(p);
	int skip = emit_jump(p, OP_JUMP_FALSE);
	scoped_block(p);
	if (match(p, T_ELSE)) {
		int end = emit_jump(p, OP_JUMP);
		patch_jump(p, skip);
		if (match(p, T_IF))
			if_statement(p);
		else
			scoped_block(p);
		patch_jump(p, end);
		return;
	}
	patch_jump(p, skip);
}

static void open_loop(Parser *p, Loop *lp, int cont)
{
	memset(lp, 0, sizeof *lp);
	lp->outer = p->sc->loop;
	lp->depth = p->sc->depth;
	lp->cont = cont;
	p->sc->loop = lp;
}

static void close_loop(Parser *p, Loop *lp, int cont)
{
	for (int i = 0; i < lp->nconts; i++)
		patch_jump_to(p, lp->conts[i], cont);
	for (int i = 0; i < lp->nbreaks; i++)
		patch_jump(p, lp->breaks[i]);
	p->sc->loop = lp->outer;
}

static void while_statement(Parser *p)
{
	int start = chunk(p)->len;
	expression(p);
	int exit = emit_jump(p, OP_JUMP_FALSE);
	Loop lp;
	open_loop(p, &lp, start);
	scoped_block(p);
	emit_loop(p, start);
	patch_jump(p, exit);
	close_loop(p, &lp, start);
}

/* for i = a, b { body }: i runs from a up to b-1; b is evaluated once,
 * into a hidden local. */
static void for_statement(Parser *p)
{
	begin_scope(p);
	expect(p, T_IDENT, "(the loop variable)");
	Token name = p->prev;
	expect(p, T_ASSIGN, "after the loop variable");
	expression(p);
	int var = add_local(p, name.start, name.len);
	expect(p, T_COMMA, "between the bounds");
	expression(p);
	int lim = add_local(p, "", 0);
	int start = chunk(p)->len;
	emit(p, OP_LT_LOCAL_JUMP);
	emit2(p, (uint8_t)var, (uint8_t)lim);
	emit16(p, 0xffff);
	int exit = chunk(p)->len - 2;
	Loop lp;
	open_loop(p, &lp, -1);
	scoped_block(p);
	int cont = chunk(p)->len;
	emit2(p, OP_INC_LOCAL, (uint8_t)var);
	emit_loop(p, start);
	patch_jump(p, exit);
	close_loop(p, &lp, cont);
	end_scope(p);
}

static void jump_out(Parser *p, int is_break)
{
	Loop *lp = p->sc->loop;
	expect(p, T_SEMI, is_break ? "after break" : "after continue");
	if (!lp) {
		error_at(p, &p->prev, "break or continue outside a loop");
		return;
	}
	pop_locals_above(p, lp->depth);
	if (!is_break && lp->cont >= 0) {
		emit_loop(p, lp->cont);
		return;
	}
	int j = emit_jump(p, OP_JUMP);
	if (is_break && lp->nbreaks < MAX_JUMPS)
		lp->breaks[lp->nbreaks++] = j;
	else if (!is_break && lp->nconts < MAX_JUMPS)
		lp->conts[lp->nconts++] = j;
	else
		error_at(p, &p->prev, "too many jumps out of one loop");
}

static void return_statement(Parser *p)
{
	if (p->sc->outer == NULL)
		error_at(p, &p->prev, "return outside a function");
	if (match(p, T_SEMI)) {
		emit(p, OP_NIL);
	} else {
		expression(p);
		expect(p, T_SEMI, "after the returned value");
	}
	emit(p, OP_RETURN);
}

static void statement(Parser *p)
{
	if (match(p, T_FN)) {
		fn_declaration(p);
	} else if (match(p, T_LET)) {
		let_declaration(p);
	} else if (match(p, T_PRINT)) {
		expression(p);
		expect(p, T_SEMI, "after the printed value");
		emit(p, OP_PRINT);
	} else if (match(p, T_IF)) {
		if_statement(p);
	} else if (match(p, T_WHILE)) {
		while_statement(p);
	} else if (match(p, T_FOR)) {
		for_statement(p);
	} else if (match(p, T_RETURN)) {
		return_statement(p);
	} else if (match(p, T_BREAK)) {
		jump_out(p, 1);
	} else if (match(p, T_CONTINUE)) {
		jump_out(p, 0);
	} else if (check(p, T_LBRACE)) {
		scoped_block(p);
	} else {
		expression(p);
		expect(p, T_SEMI, "after the expression");
		emit(p, OP_POP);
	}
}

ObjFunc *compile(const char *src)
{
	Parser p;
	Scope top;
	memset(&p, 0, sizeof p);
	memset(&top, 0, sizeof top);
	top.fn = new_func(NULL);
	p.sc = &top;
	lexer_init(&p.lx, src);
	advance(&p);
	add_local(&p, "", 0);
	while (!check(&p, T_EOF))
		statement(&p);
	emit(&p, OP_NIL);
	emit(&p, OP_RETURN);
	return p.errors ? NULL : top.fn;
}
