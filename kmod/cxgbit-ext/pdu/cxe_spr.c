// SPDX-License-Identifier: GPL-2.0-only
/*
 * cxgbit-ext pure protocol code: the agent channel's lines (cxe_spr.h).
 */
#include "cxe_spr.h"

struct cxe_spr_out {
	char	*buf;
	size_t	size;
	size_t	len;
	bool	full;
};

static void put_char(struct cxe_spr_out *o, char c)
{
	if (o->len + 1 >= o->size) {
		o->full = true;
		return;
	}
	o->buf[o->len++] = c;
}

static void put_str(struct cxe_spr_out *o, const char *s)
{
	while (*s)
		put_char(o, *s++);
}

static void put_u64(struct cxe_spr_out *o, u64 v)
{
	char d[20];
	int n = 0;

	do {
		d[n++] = '0' + v % 10;
		v /= 10;
	} while (v);
	while (n)
		put_char(o, d[--n]);
}

static void put_hex(struct cxe_spr_out *o, const u8 *p, u32 len)
{
	static const char x[] = "0123456789abcdef";
	u32 i;

	if (!len) {
		put_char(o, '-');
		return;
	}
	for (i = 0; i < len; i++) {
		put_char(o, x[p[i] >> 4]);
		put_char(o, x[p[i] & 15]);
	}
}

static int put_end(struct cxe_spr_out *o)
{
	put_char(o, '\n');
	if (o->full)
		return -ENOSPC;
	o->buf[o->len] = '\0';
	return (int)o->len;
}

int cxe_spr_format_out(char *buf, size_t size, u64 id,
		       const struct cxe_spr_nexus *nx, const u8 *cdb,
		       const u8 *param, u32 plen)
{
	struct cxe_spr_out o = { .buf = buf, .size = size };

	put_str(&o, "out ");
	put_u64(&o, id);
	put_char(&o, ' ');
	put_str(&o, nx->target);
	put_char(&o, ' ');
	put_u64(&o, nx->tpgt);
	put_char(&o, ' ');
	put_u64(&o, nx->lun);
	put_char(&o, ' ');
	put_str(&o, nx->initiator);
	put_char(&o, ' ');
	put_hex(&o, nx->isid, CXE_SPR_ISID_LEN);
	put_char(&o, ' ');
	put_hex(&o, cdb, CXE_SPR_CDB_LEN);
	put_char(&o, ' ');
	put_hex(&o, param, plen);
	return put_end(&o);
}

int cxe_spr_format_done(char *buf, size_t size, u64 tag, int ret)
{
	struct cxe_spr_out o = { .buf = buf, .size = size };

	put_str(&o, "done ");
	put_u64(&o, tag);
	put_char(&o, ' ');
	if (ret < 0)
		put_str(&o, "gone");
	else
		put_u64(&o, (u64)ret);
	return put_end(&o);
}

/* The next space-separated word of *s (NUL-terminated in place), or NULL */
static char *next_word(char **s)
{
	char *w = *s, *e;

	if (!w || !*w)
		return NULL;
	for (e = w; *e && *e != ' '; e++)
		;
	if (e == w)
		return NULL;	/* two spaces: an empty word */
	if (*e) {
		*e = '\0';
		*s = e + 1;
	} else {
		*s = NULL;
	}
	return w;
}

static int parse_u64(const char *w, u64 max, u64 *v)
{
	u64 r = 0;

	if (!w || !*w || (w[0] == '0' && w[1]))
		return -EINVAL;
	for (; *w; w++) {
		if (*w < '0' || *w > '9' || r > (max - (u64)(*w - '0')) / 10)
			return -EINVAL;
		r = r * 10 + (u64)(*w - '0');
	}
	*v = r;
	return 0;
}

static int hex_val(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* Decode w's hex into out (which may be w itself): its length, or -EINVAL */
static int parse_hex(const char *w, u8 *out, size_t max)
{
	size_t n, i;

	if (!w)
		return -EINVAL;
	n = strlen(w);
	if (n % 2 || n / 2 > max)
		return -EINVAL;
	for (i = 0; i < n / 2; i++) {
		int hi = hex_val(w[2 * i]), lo = hex_val(w[2 * i + 1]);

		if (hi < 0 || lo < 0)
			return -EINVAL;
		out[i] = (u8)(hi << 4 | lo);
	}
	return (int)(n / 2);
}

static int parse_name(const char *w, char *out)
{
	size_t n, i;

	if (!w)
		return -EINVAL;
	n = strlen(w);
	if (!n || n >= CXE_SPR_NAME_MAX)
		return -EINVAL;
	for (i = 0; i < n; i++)
		if (w[i] <= ' ' || w[i] > '~')
			return -EINVAL;
	memcpy(out, w, n + 1);
	return 0;
}

static int parse_apply(char **s, struct cxe_spr_msg *m)
{
	char *param;
	u64 v;
	int n;

	if (parse_name(next_word(s), m->nx.target) ||
	    parse_u64(next_word(s), 0xffff, &v))
		return -EINVAL;
	m->nx.tpgt = (u16)v;
	if (parse_u64(next_word(s), ~0ULL, &m->nx.lun) ||
	    parse_name(next_word(s), m->nx.initiator) ||
	    parse_hex(next_word(s), m->nx.isid, CXE_SPR_ISID_LEN) != CXE_SPR_ISID_LEN ||
	    parse_hex(next_word(s), m->cdb, CXE_SPR_CDB_LEN) != CXE_SPR_CDB_LEN)
		return -EINVAL;
	param = next_word(s);
	if (!param || *s)
		return -EINVAL;
	if (!strcmp(param, "-")) {
		m->plen = 0;
	} else {
		n = parse_hex(param, (u8 *)param, CXE_SPR_PARAM_MAX);
		if (n <= 0)
			return -EINVAL;
		m->plen = (u32)n;
	}
	m->param = (const u8 *)param;
	return 0;
}

int cxe_spr_parse(char *line, size_t len, struct cxe_spr_msg *m)
{
	char *s = line, *verb;

	if (!len || len >= CXE_SPR_LINE_MAX)
		return -EINVAL;
	if (line[len - 1] == '\n')
		len--;
	if (memchr(line, '\0', len) || memchr(line, '\n', len))
		return -EINVAL;
	line[len] = '\0';
	memset(m, 0, sizeof(*m));
	verb = next_word(&s);
	if (!verb)
		return -EINVAL;
	if (!strcmp(verb, "run")) {
		m->verb = CXE_SPR_RUN;
		if (parse_u64(next_word(&s), ~0ULL, &m->id) ||
		    parse_u64(next_word(&s), ~0ULL, &m->tag))
			return -EINVAL;
	} else if (!strcmp(verb, "fail")) {
		m->verb = CXE_SPR_FAIL;
		if (parse_u64(next_word(&s), ~0ULL, &m->id))
			return -EINVAL;
	} else if (!strcmp(verb, "serve") || !strcmp(verb, "hold")) {
		m->verb = verb[0] == 's' ? CXE_SPR_SERVE : CXE_SPR_HOLD;
		if (parse_name(next_word(&s), m->nx.target))
			return -EINVAL;
	} else if (!strcmp(verb, "apply")) {
		m->verb = CXE_SPR_APPLY;
		if (parse_u64(next_word(&s), ~0ULL, &m->tag) ||
		    parse_apply(&s, m))
			return -EINVAL;
		return 0;
	} else {
		return -EINVAL;
	}
	return s ? -EINVAL : 0;
}

bool cxe_spr_held_allows(const u8 *cdb)
{
	switch (cdb[0]) {
	case 0x12:	/* INQUIRY */
	case 0xa0:	/* REPORT LUNS */
	case 0x03:	/* REQUEST SENSE */
		return true;
	case 0xa3:	/* MAINTENANCE IN: REPORT TARGET PORT GROUPS only */
		return (cdb[1] & 0x1f) == 0x0a;
	default:
		return false;
	}
}
