/*
 * cmd_config.c - `apx config`: list, get, set and unset the keys of the user's nvperfd config
 * (~/.config/nvperf/nvperfd.conf: tracked metrics, notice mode, thresholds). Every change is
 * validated with the daemon's own parser (lib/daemon/config.c) before it is written, and written
 * atomically (temporary file + rename), keeping the file's comments and other lines. Without a
 * subcommand on a terminal it is a small REPL with history (up/down) and completion of commands
 * and keys (Tab), on a hand-written line editor; the history is kept in apx-config.history
 * next to the file. nvperfd notices the change (inotify) and
 * applies it to processes that start afterwards. Called from main.c.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <termios.h>
#include <unistd.h>

#include "cli/cli.h"
#include "daemon/config.h"

#include "base/banned.h"

const char apx_cmd_config_usage[] =
	"usage: apx config [--file PATH] [list | get KEY | set KEY VALUE | unset KEY | keys | path]\n"
	"\n"
	"Show or change your nvperfd settings: which metrics are kept, how you are told about a\n"
	"problem (notice = none, log or tty) and the thresholds that raise a notice. Changes are\n"
	"checked before they are written and apply to processes that start afterwards.\n"
	"Without a subcommand on a terminal, an interactive prompt (Tab completes, up/down recall).\n"
	"\n"
	"  list               every per-user key with its value (default, machine or yours)\n"
	"  get KEY            one value\n"
	"  set KEY VALUE      set a key (e.g. apx config set threshold.rss_peak 16G)\n"
	"  unset KEY          back to the machine default\n"
	"  keys               the keys with what each means\n"
	"  path               the file being edited\n"
	"\n"
	"  -f, --file PATH    edit this file instead of the one nvperfd reads for you\n"
	"                     (~/.config/nvperf/nvperfd.conf unless " APX_CONF_MACHINE_PATH " says)\n"
	"  -h, --help         show this help\n"
	"\n"
	"Exit status: 0 ok; 1 the file is invalid or cannot be written; 2 usage error (unknown\n"
	"key, invalid value).\n";

struct cfgfile {
	char path[4096];
	char *text;		/* current contents (NUL-terminated) */
	size_t len;
};

/* The file nvperfd reads for this user: the machine config's user_config template ("~/" =
 * home, "%u" = uid), default ~/.config/nvperf/nvperfd.conf. Not $XDG_CONFIG_HOME: the daemon
 * cannot see the user's environment. */
static int default_path(char *buf, size_t cap)
{
	struct passwd pw, *res = NULL;
	struct apx_conf conf;
	char pwbuf[4096];
	const char *home = NULL;

	apx_conf_defaults(&conf);
	(void)apx_conf_load(APX_CONF_MACHINE_PATH, APX_CONF_MACHINE, (uid_t)-1, &conf, NULL);
	if (getpwuid_r(getuid(), &pw, pwbuf, sizeof(pwbuf), &res) == 0 && res)
		home = res->pw_dir;
	return apx_conf_user_path(conf.user_config, home, getuid(), buf, cap);
}

static int file_read(struct cfgfile *f)
{
	int fd = open(f->path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	struct stat st;
	ssize_t n;

	free(f->text);
	f->text = NULL;
	f->len = 0;
	if (fd < 0) {
		if (errno != ENOENT)
			return -errno;
		f->text = strdup("");
		return f->text ? 0 : -ENOMEM;
	}
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size > APX_CONF_FILE_MAX) {
		close(fd);
		return -EINVAL;
	}
	f->text = malloc((size_t)st.st_size + 1);
	if (!f->text) {
		close(fd);
		return -ENOMEM;
	}
	n = read(fd, f->text, (size_t)st.st_size);
	close(fd);
	if (n < 0)
		return -errno;
	f->len = (size_t)n;
	f->text[n] = 0;
	return 0;
}

/* Effective config: defaults, the machine file (if readable), then this file. */
static int effective(const struct cfgfile *f, struct apx_conf *ret, struct apx_conf *machine,
		     struct apx_conf_error *err)
{
	struct apx_conf c;

	apx_conf_defaults(&c);
	(void)apx_conf_load(APX_CONF_MACHINE_PATH, APX_CONF_MACHINE, (uid_t)-1, &c, NULL);
	if (machine)
		*machine = c;
	if (ret)
		*ret = c;
	return apx_conf_parse(f->text, f->len, f->path, APX_CONF_USER, ret ? ret : &c, err);
}

static int file_has_key(const char *text, const char *key)
{
	const char *p = text;
	size_t kl = strlen(key);

	while (*p) {
		const char *q = p + strspn(p, " \t");

		if (!strncmp(q, key, kl) && (q[kl] == ' ' || q[kl] == '\t' || q[kl] == '='))
			return 1;
		p = strchr(p, '\n');
		if (!p)
			break;
		p++;
	}
	return 0;
}

/* New text: every line setting key removed; "key = value" appended when value != NULL. */
static char *edit_text(const char *text, const char *key, const char *value)
{
	size_t cap = strlen(text) + strlen(key) + (value ? strlen(value) : 0) + 8, o = 0;
	size_t kl = strlen(key);
	char *out = malloc(cap);
	const char *p = text;

	if (!out)
		return NULL;
	while (*p) {
		const char *nl = strchr(p, '\n');
		size_t n = nl ? (size_t)(nl - p) + 1 : strlen(p);
		const char *q = p + strspn(p, " \t");

		if (!(!strncmp(q, key, kl) && (q[kl] == ' ' || q[kl] == '\t' || q[kl] == '='))) {
			memcpy(out + o, p, n);
			o += n;
			if (!nl)
				out[o++] = '\n';
		}
		p += n;
	}
	if (value)
		o += (size_t)snprintf(out + o, cap - o, "%s = %s\n", key, value);
	out[o] = 0;
	return out;
}

static int mkdir_parents(const char *path)
{
	char buf[4200];	/* as large as the callers' paths */

	snprintf(buf, sizeof(buf), "%s", path);
	for (char *p = buf + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = 0;
		if (mkdir(buf, 0700) < 0 && errno != EEXIST)
			return -errno;
		*p = '/';
	}
	return 0;
}

static int write_atomic(const char *path, const char *text)
{
	char tmp[4200];
	size_t len = strlen(text), off = 0;
	int fd, r = 0;

	if ((r = mkdir_parents(path)) < 0)
		return r;
	snprintf(tmp, sizeof(tmp), "%s.tmp.%d", path, (int)getpid());
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return -errno;
	while (off < len) {
		ssize_t n = write(fd, text + off, len - off);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			r = -errno;
			break;
		}
		off += (size_t)n;
	}
	if (r == 0 && fsync(fd) < 0)
		r = -errno;
	if (close(fd) < 0 && r == 0)
		r = -errno;
	if (r == 0 && rename(tmp, path) < 0)
		r = -errno;
	if (r < 0)
		(void)unlink(tmp);
	return r;
}

static const struct apx_conf_key *user_key(const char *name, char *why, size_t cap)
{
	const struct apx_conf_key *k = apx_conf_key_find(name, strlen(name));

	if (!k)
		snprintf(why, cap, "unknown key '%s'; 'apx config keys' lists them", name);
	else if (k->scope == APX_CONF_MACHINE)
		snprintf(why, cap, "'%s' is a machine setting: it can only be set in %s", name,
			 APX_CONF_MACHINE_PATH);
	else
		return k;
	return NULL;
}

/* Returns an exit status; messages on stderr prefixed "apx config: " when oneshot. */
static int do_set(struct cfgfile *f, const char *key, const char *value)
{
	const struct apx_conf_key *k;
	struct apx_conf_error err = { 0 };
	struct apx_cfgtmp { struct cfgfile f; } t;
	char why[300];
	char *text;
	int r;

	k = user_key(key, why, sizeof(why));
	if (!k) {
		fprintf(stderr, "apx config: %s\n", why);
		return APX_EXIT_USAGE;
	}
	if (value && (strchr(value, '\n') || apx_conf_check(k, value, &err) < 0)) {
		fprintf(stderr, "apx config: %s: %s\n", key,
			strchr(value, '\n') ? "expected a single line" : err.msg);
		return APX_EXIT_USAGE;
	}
	text = edit_text(f->text, key, value);
	if (!text)
		return APX_EXIT_FAIL;
	/* validate the whole new file, as the daemon will read it */
	t.f = *f;
	t.f.text = text;
	t.f.len = strlen(text);
	if (effective(&t.f, NULL, NULL, &err) < 0) {
		fprintf(stderr, "apx config: the file would be invalid, not written: %s\n", err.msg);
		free(text);
		return APX_EXIT_FAIL;
	}
	r = write_atomic(f->path, text);
	if (r < 0) {
		fprintf(stderr, "apx config: cannot write '%s': %s\n", f->path, strerror(-r));
		free(text);
		return APX_EXIT_FAIL;
	}
	free(f->text);
	f->text = text;
	f->len = strlen(text);
	return APX_EXIT_OK;
}

static int do_list(const struct cfgfile *f, const char *only)
{
	struct apx_conf c, m;
	struct apx_conf_error err = { 0 };

	if (effective(f, &c, &m, &err) < 0) {
		fprintf(stderr, "apx config: %s\n", err.msg);
		return APX_EXIT_FAIL;
	}
	for (size_t i = 0; i < apx_conf_key_count(); i++) {
		const struct apx_conf_key *k = apx_conf_key_at(i);
		char v[300];

		if (k->scope != APX_CONF_USER || (only && strcmp(only, k->name)))
			continue;
		apx_conf_format(&c, k, v, sizeof(v));
		if (only)
			printf("%s\n", v);
		else
			printf("%-26s = %-12s %s\n", k->name, v,
			       file_has_key(f->text, k->name) ? "" : "# default");
	}
	return APX_EXIT_OK;
}

static void do_keys(void)
{
	for (size_t i = 0; i < apx_conf_key_count(); i++) {
		const struct apx_conf_key *k = apx_conf_key_at(i);

		if (k->scope == APX_CONF_USER)
			printf("%-26s %s\n", k->name, k->help);
	}
}

/* ---- the interactive prompt --------------------------------------------------------------- */

#define HIST_MAX 100
#define LINE_MAX_LEN 512

static const char *const repl_cmds[] = { "list", "get", "set", "unset", "keys", "path", "help",
					 "quit" };

struct editor {
	char *hist[HIST_MAX];
	size_t nhist;
};

static void redraw(const char *prompt, const char *buf, size_t len, size_t pos)
{
	printf("\r\033[K%s%.*s", prompt, (int)len, buf);
	if (len > pos)
		printf("\033[%zuD", len - pos);
	fflush(stdout);
}

/* Complete the word under the cursor (at the end of buf): commands, then keys. */
static void complete(char *buf, size_t *len, size_t *pos, const char *prompt)
{
	const char *cands[64];
	size_t nc = 0, wstart = *len, wlen, common;
	int first_word;

	while (wstart && buf[wstart - 1] != ' ')
		wstart--;
	wlen = *len - wstart;
	first_word = strspn(buf, " ") >= wstart;
	if (first_word) {
		for (size_t i = 0; i < sizeof(repl_cmds) / sizeof(repl_cmds[0]); i++)
			if (!strncmp(repl_cmds[i], buf + wstart, wlen))
				cands[nc++] = repl_cmds[i];
	} else {
		for (size_t i = 0; i < apx_conf_key_count() && nc < 64; i++) {
			const struct apx_conf_key *k = apx_conf_key_at(i);

			if (k->scope == APX_CONF_USER && !strncmp(k->name, buf + wstart, wlen))
				cands[nc++] = k->name;
		}
	}
	if (!nc)
		return;
	common = strlen(cands[0]);
	for (size_t i = 1; i < nc; i++) {
		size_t j = 0;

		while (j < common && cands[i][j] == cands[0][j])
			j++;
		common = j;
	}
	if (common > wlen && wstart + common + 1 < LINE_MAX_LEN) {
		memcpy(buf + wstart, cands[0], common);
		*len = wstart + common;
		if (nc == 1)
			buf[(*len)++] = ' ';
		*pos = *len;
	} else if (nc > 1) {
		printf("\r\n");
		for (size_t i = 0; i < nc; i++)
			printf("%s  ", cands[i]);
		printf("\r\n");
	}
	redraw(prompt, buf, *len, *pos);
}

/* Read one line in raw mode. Returns 1 with a line, 0 at end (Ctrl-D on an empty line). */
static int read_line(struct editor *e, const char *prompt, char *buf)
{
	size_t len = 0, pos = 0, hi = e->nhist;
	char saved[LINE_MAX_LEN] = "";

	redraw(prompt, buf, 0, 0);
	for (;;) {
		unsigned char ch;
		ssize_t n = read(0, &ch, 1);

		if (n <= 0)
			return 0;
		if (ch == '\r' || ch == '\n') {
			buf[len] = 0;
			printf("\r\n");
			return 1;
		} else if (ch == 4) {			/* Ctrl-D */
			if (!len) {
				printf("\r\n");
				return 0;
			}
		} else if (ch == 3) {			/* Ctrl-C: drop the line */
			len = pos = 0;
			printf("^C\r\n");
		} else if (ch == 127 || ch == 8) {
			if (pos) {
				memmove(buf + pos - 1, buf + pos, len - pos);
				len--;
				pos--;
			}
		} else if (ch == 1) {
			pos = 0;
		} else if (ch == 5) {
			pos = len;
		} else if (ch == '\t') {
			if (pos == len)
				complete(buf, &len, &pos, prompt);
			continue;
		} else if (ch == 27) {			/* ESC [ A/B/C/D */
			unsigned char seq[2];

			if (read(0, seq, 1) != 1 || seq[0] != '[' || read(0, seq + 1, 1) != 1)
				continue;
			if (seq[1] == 'C' && pos < len)
				pos++;
			else if (seq[1] == 'D' && pos)
				pos--;
			else if ((seq[1] == 'A' && hi > 0) || (seq[1] == 'B' && hi < e->nhist)) {
				if (hi == e->nhist) {
					memcpy(saved, buf, len);
					saved[len] = 0;
				}
				hi += seq[1] == 'A' ? (size_t)-1 : 1;
				snprintf(buf, LINE_MAX_LEN, "%s", hi < e->nhist ? e->hist[hi] : saved);
				len = pos = strlen(buf);
			}
		} else if (ch >= 0x20 && ch < 0x7f && len + 1 < LINE_MAX_LEN) {
			memmove(buf + pos + 1, buf + pos, len - pos);
			buf[pos++] = (char)ch;
			len++;
		}
		redraw(prompt, buf, len, pos);
	}
}

static void hist_add(struct editor *e, const char *line)
{
	if (!line[0] || (e->nhist && !strcmp(e->hist[e->nhist - 1], line)))
		return;
	if (e->nhist == HIST_MAX) {
		free(e->hist[0]);
		memmove(e->hist, e->hist + 1, (HIST_MAX - 1) * sizeof(e->hist[0]));
		e->nhist--;
	}
	e->hist[e->nhist] = strdup(line);
	if (e->hist[e->nhist])
		e->nhist++;
}

/* The prompt's history is kept next to the config file, as apx-config.history (0600). */
static void hist_path(const struct cfgfile *f, char *buf, size_t cap)
{
	const char *slash = strrchr(f->path, '/');

	if (slash)
		snprintf(buf, cap, "%.*s/apx-config.history", (int)(slash - f->path), f->path);
	else
		snprintf(buf, cap, "apx-config.history");
}

static void hist_load(struct editor *e, const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	FILE *in = fd >= 0 ? fdopen(fd, "r") : NULL;
	char line[LINE_MAX_LEN];

	if (!in) {
		if (fd >= 0)
			close(fd);
		return;
	}
	while (fgets(line, sizeof(line), in)) {
		line[strcspn(line, "\n")] = 0;
		hist_add(e, line);
	}
	fclose(in);
}

static void hist_save(const struct editor *e, const char *path)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
	FILE *out = fd >= 0 ? fdopen(fd, "w") : NULL;

	if (!out) {
		if (fd >= 0)
			close(fd);
		return;
	}
	for (size_t i = 0; i < e->nhist; i++)
		fprintf(out, "%s\n", e->hist[i]);
	fclose(out);
}

static int run_words(struct cfgfile *f, int argc, char **argv);

static int repl(struct cfgfile *f)
{
	struct termios saved, raw;
	struct editor e = { { 0 }, 0 };
	char line[LINE_MAX_LEN], hpath[4200];

	if (tcgetattr(0, &saved) < 0)
		return APX_EXIT_FAIL;
	hist_path(f, hpath, sizeof(hpath));
	hist_load(&e, hpath);
	printf("apx config: editing %s\n'help' lists the commands; Tab completes; Ctrl-D or "
	       "'quit' leaves.\n", f->path);
	raw = saved;
	raw.c_lflag &= (tcflag_t)~(ICANON | ECHO | ISIG);
	raw.c_iflag &= (tcflag_t)~(ICRNL | IXON);
	raw.c_cc[VMIN] = 1;
	raw.c_cc[VTIME] = 0;
	tcsetattr(0, TCSANOW, &raw);
	while (read_line(&e, "nvperfd> ", line)) {
		char *words[4], *p = line;
		int n = 0;

		hist_add(&e, line);
		while (*p && n < 4) {
			p += strspn(p, " ");
			if (!*p)
				break;
			words[n++] = p;
			if (n == 3)	/* the value keeps its spaces */
				break;
			p += strcspn(p, " ");
			if (*p)
				*p++ = 0;
		}
		if (!n)
			continue;
		if (!strcmp(words[0], "quit") || !strcmp(words[0], "exit"))
			break;
		tcsetattr(0, TCSANOW, &saved);
		if (!strcmp(words[0], "help"))
			printf("list | get KEY | set KEY VALUE | unset KEY | keys | path | quit\n");
		else
			(void)run_words(f, n, words);
		fflush(stdout);
		fflush(stderr);
		tcsetattr(0, TCSANOW, &raw);
	}
	tcsetattr(0, TCSANOW, &saved);
	if (e.nhist && mkdir_parents(hpath) == 0)
		hist_save(&e, hpath);
	for (size_t i = 0; i < e.nhist; i++)
		free(e.hist[i]);
	return APX_EXIT_OK;
}

static int run_words(struct cfgfile *f, int argc, char **argv)
{
	const char *cmd = argv[0];
	char why[300];

	if (!strcmp(cmd, "list") && argc == 1)
		return do_list(f, NULL);
	if (!strcmp(cmd, "keys") && argc == 1) {
		do_keys();
		return APX_EXIT_OK;
	}
	if (!strcmp(cmd, "path") && argc == 1) {
		printf("%s\n", f->path);
		return APX_EXIT_OK;
	}
	if (!strcmp(cmd, "get") && argc == 2) {
		if (!user_key(argv[1], why, sizeof(why))) {
			fprintf(stderr, "apx config: %s\n", why);
			return APX_EXIT_USAGE;
		}
		return do_list(f, argv[1]);
	}
	if (!strcmp(cmd, "set") && argc == 3)
		return do_set(f, argv[1], argv[2]);
	if (!strcmp(cmd, "unset") && argc == 2)
		return do_set(f, argv[1], NULL);
	return apx_cli_usage_error("config", "expected list, get KEY, set KEY VALUE, unset KEY, "
				   "keys or path");
}

int apx_cmd_config(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "file", required_argument, NULL, 'f' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct cfgfile f = { "", NULL, 0 };
	int c, r;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "+:f:h", opts, NULL)) != -1) {
		switch (c) {
		case 'f':
			snprintf(f.path, sizeof(f.path), "%s", optarg);
			break;
		case 'h':
			apx_cli_print_usage("config");
			return APX_EXIT_OK;
		case ':':
			return apx_cli_usage_error("config", "option '%s' needs a value",
						   argv[optind - 1]);
		default:
			return apx_cli_unknown_option("config", opts, argv[optind - 1]);
		}
	}
	if (!f.path[0] && default_path(f.path, sizeof(f.path)) < 0) {
		fprintf(stderr, "apx config: cannot find your home folder; use --file PATH\n");
		return APX_EXIT_FAIL;
	}
	r = file_read(&f);
	if (r < 0) {
		fprintf(stderr, "apx config: cannot read '%s': %s\n", f.path, strerror(-r));
		return APX_EXIT_FAIL;
	}
	if (optind >= argc)
		r = isatty(0) && isatty(1) ? repl(&f) : do_list(&f, NULL);
	else
		r = run_words(&f, argc - optind, argv + optind);
	free(f.text);
	return r;
}
