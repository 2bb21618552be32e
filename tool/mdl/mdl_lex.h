/* SPDX-License-Identifier: MIT */
/* The MDL lexer (docs/mdl.md, "Lexical structure"): internal to tool/mdl/parse.c, and shared by
 * the hypothesis language of tool/consult/ (expression mode). */
#ifndef SONDE_MDL_LEX_H
#define SONDE_MDL_LEX_H

#include <stddef.h>
#include <stdint.h>

enum tok {
	T_EOF, T_IDENT, T_DOLLAR, T_STRING, T_INT,
	T_LBRACE, T_RBRACE, T_LBRACK, T_RBRACK, T_LPAREN, T_RPAREN,
	T_SEMI, T_COMMA, T_ARROW, T_SLASH, T_STAR, T_ASSIGN,
	T_EQ, T_NE, T_LT, T_LE, T_GT, T_GE,
	/* expression mode only (lx->exprs: the hypothesis language, docs/consult.md) */
	T_REAL, T_PLUS, T_MINUS, T_ANDAND, T_OROR, T_NOT
};

struct lexer {
	const char *file, *p;
	int line, col;
	/* the current token */
	enum tok t;
	const char *start; /* its text in the source (T_DOLLAR: with the '$') */
	size_t len;
	int tline, tcol;
	int64_t ival; /* T_INT */
	double dval;  /* T_REAL, and T_INT's value too in expression mode */
	int exprs;    /* expression mode: reals, + - && || !, and '-' is never part of a number */
	char *sval;   /* T_STRING, unescaped; owned by the lexer until the next token */
	/* the first error: "file:line:column: message" */
	char *err;
	size_t errcap;
	int failed;
};

void lex_init(struct lexer *lx, const char *file, const char *src, char *err, size_t cap);
void lex_done(struct lexer *lx);
/* Move to the next token: 0, or -1 after recording an error. */
int lex_next(struct lexer *lx);
/* Record an error at a position (only the first is kept); returns -1. */
int lex_error_at(struct lexer *lx, int line, int col, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
/* The current token in words, for messages: "'metric'", "a string", "end of file". */
const char *lex_describe(const struct lexer *lx, char *buf, size_t cap);
/* "expected WHAT, found <the current token>" at the current token; returns -1. */
int lex_expected(struct lexer *lx, const char *what);
/* Move past the current token if it is t, else lex_expected(what). */
int lex_expect(struct lexer *lx, enum tok t, const char *what);
/* The current token is this identifier or $name. */
int lex_is(const struct lexer *lx, enum tok t, const char *text);

#endif
