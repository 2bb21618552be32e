/* SPDX-License-Identifier: MIT */
/*
 * The MDL lexer: identifiers, $names, strings with \" and \\ escapes, integers (an optional
 * leading minus), punctuation and // comments. Lines and columns count from 1; a column counts
 * bytes, so a tab is one column.
 */
#include "mdl_lex.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

void lex_init(struct lexer *lx, const char *file, const char *src, char *err, size_t cap)
{
	memset(lx, 0, sizeof(*lx));
	lx->file = file;
	lx->p = src;
	lx->line = 1;
	lx->col = 1;
	lx->err = err;
	lx->errcap = cap;
}

void lex_done(struct lexer *lx)
{
	free(lx->sval);
	lx->sval = NULL;
}

int lex_error_at(struct lexer *lx, int line, int col, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (lx->failed++)
		return -1;
	n = snprintf(lx->err, lx->errcap, "%s:%d:%d: ", lx->file, line, col);
	if (n < 0 || (size_t)n >= lx->errcap)
		return -1;
	va_start(ap, fmt);
	vsnprintf(lx->err + n, lx->errcap - (size_t)n, fmt, ap);
	va_end(ap);
	return -1;
}

static void advance(struct lexer *lx)
{
	if (*lx->p == '\n') {
		lx->line++;
		lx->col = 1;
	} else {
		lx->col++;
	}
	lx->p++;
}

static void skip_space(struct lexer *lx)
{
	for (;;) {
		if (*lx->p == ' ' || *lx->p == '\t' || *lx->p == '\n' || *lx->p == '\r')
			advance(lx);
		else if (lx->p[0] == '/' && lx->p[1] == '/')
			while (*lx->p && *lx->p != '\n')
				advance(lx);
		else
			return;
	}
}

static int is_ident(int c, int first)
{
	return isalpha(c) || c == '_' || (!first && isdigit(c));
}

static int lex_word(struct lexer *lx, enum tok t)
{
	if (t == T_DOLLAR) {
		advance(lx);
		if (!is_ident((unsigned char)*lx->p, 1))
			return lex_error_at(lx, lx->tline, lx->tcol, "'$' must start a name like $arg");
	}
	while (is_ident((unsigned char)*lx->p, 0))
		advance(lx);
	lx->t = t;
	return 0;
}

/* Expression mode: a decimal number, with a fraction or exponent a real (T_REAL). */
static int lex_number(struct lexer *lx)
{
	char *end;
	const char *q = lx->p;

	while (isdigit((unsigned char)*q))
		q++;
	if (*q != '.' && *q != 'e' && *q != 'E') {
		errno = 0;
		lx->ival = strtoll(lx->p, &end, 10);
		if (errno || is_ident((unsigned char)*end, 0))
			return lex_error_at(lx, lx->tline, lx->tcol, "bad number");
		lx->dval = (double)lx->ival;
		lx->t = T_INT;
	} else {
		errno = 0;
		lx->dval = strtod(lx->p, &end);
		if (errno || end == lx->p || is_ident((unsigned char)*end, 0) || *end == '.')
			return lex_error_at(lx, lx->tline, lx->tcol, "bad number");
		lx->t = T_REAL;
	}
	while (lx->p < end)
		advance(lx);
	return 0;
}

static int lex_int(struct lexer *lx)
{
	char *end;

	errno = 0;
	lx->ival = strtoll(lx->p, &end, 10);
	if (errno || is_ident((unsigned char)*end, 0) || *end == '.')
		return lex_error_at(lx, lx->tline, lx->tcol, "bad integer (64-bit, no fraction)");
	while (lx->p < end)
		advance(lx);
	lx->t = T_INT;
	return 0;
}

static int lex_string(struct lexer *lx)
{
	size_t n = 0;
	char *s = xmalloc(strcspn(lx->p, "\n") + 1);

	advance(lx);
	while (*lx->p != '"') {
		if (!*lx->p || *lx->p == '\n') {
			free(s);
			return lex_error_at(lx, lx->tline, lx->tcol, "unterminated string");
		}
		if (*lx->p == '\\' && (lx->p[1] == '"' || lx->p[1] == '\\'))
			advance(lx);
		s[n++] = *lx->p;
		advance(lx);
	}
	advance(lx);
	s[n] = 0;
	lx->sval = s;
	lx->t = T_STRING;
	return 0;
}

/* Two-character operators first, then one-character ones. */
static int lex_punct(struct lexer *lx)
{
	static const struct { const char *s; enum tok t; } ops[] = {
		{ "->", T_ARROW }, { "==", T_EQ }, { "!=", T_NE }, { "<=", T_LE }, { ">=", T_GE },
		{ "{", T_LBRACE }, { "}", T_RBRACE }, { "[", T_LBRACK }, { "]", T_RBRACK },
		{ "(", T_LPAREN }, { ")", T_RPAREN }, { ";", T_SEMI }, { ",", T_COMMA },
		{ "/", T_SLASH }, { "*", T_STAR }, { "=", T_ASSIGN }, { "<", T_LT }, { ">", T_GT },
	};
	static const struct { const char *s; enum tok t; } expr_ops[] = {
		{ "&&", T_ANDAND }, { "||", T_OROR }, { "+", T_PLUS }, { "-", T_MINUS },
		{ "!", T_NOT },
	};
	size_t i, n;

	for (i = 0; lx->exprs && i < sizeof(expr_ops) / sizeof(expr_ops[0]); i++) {
		n = strlen(expr_ops[i].s);
		if (!strncmp(lx->p, expr_ops[i].s, n) && strncmp(lx->p, "!=", 2)) {
			while (n--)
				advance(lx);
			lx->t = expr_ops[i].t;
			return 0;
		}
	}
	for (i = 0; i < sizeof(ops) / sizeof(ops[0]); i++) {
		n = strlen(ops[i].s);
		if (!strncmp(lx->p, ops[i].s, n)) {
			while (n--)
				advance(lx);
			lx->t = ops[i].t;
			return 0;
		}
	}
	if (isprint((unsigned char)*lx->p))
		return lex_error_at(lx, lx->tline, lx->tcol, "unexpected character '%c'", *lx->p);
	return lex_error_at(lx, lx->tline, lx->tcol, "unexpected byte 0x%02x",
			    (unsigned char)*lx->p);
}

int lex_next(struct lexer *lx)
{
	int c, rc;

	lex_done(lx);
	if (lx->failed)
		return -1;
	skip_space(lx);
	lx->start = lx->p;
	lx->tline = lx->line;
	lx->tcol = lx->col;
	c = (unsigned char)*lx->p;
	if (!c) {
		lx->t = T_EOF;
		rc = 0;
	} else if (is_ident(c, 1)) {
		rc = lex_word(lx, T_IDENT);
	} else if (c == '$') {
		rc = lex_word(lx, T_DOLLAR);
	} else if (lx->exprs && isdigit(c)) {
		rc = lex_number(lx);
	} else if (!lx->exprs && (isdigit(c) || (c == '-' && isdigit((unsigned char)lx->p[1])))) {
		rc = lex_int(lx);
	} else if (c == '"') {
		rc = lex_string(lx);
	} else {
		rc = lex_punct(lx);
	}
	lx->len = (size_t)(lx->p - lx->start);
	return rc;
}

int lex_is(const struct lexer *lx, enum tok t, const char *text)
{
	return lx->t == t && lx->len == strlen(text) && !strncmp(lx->start, text, lx->len);
}

const char *lex_describe(const struct lexer *lx, char *buf, size_t cap)
{
	switch (lx->t) {
	case T_EOF:
		return "end of file";
	case T_STRING:
		return "a string";
	case T_INT:
	case T_REAL:
		return "a number";
	default:
		snprintf(buf, cap, "'%.*s'", (int)(lx->len > 40 ? 40 : lx->len), lx->start);
		return buf;
	}
}

int lex_expected(struct lexer *lx, const char *what)
{
	char buf[64];

	return lex_error_at(lx, lx->tline, lx->tcol, "expected %s, found %s", what,
			    lex_describe(lx, buf, sizeof(buf)));
}

int lex_expect(struct lexer *lx, enum tok t, const char *what)
{
	return lx->t == t ? lex_next(lx) : lex_expected(lx, what);
}
