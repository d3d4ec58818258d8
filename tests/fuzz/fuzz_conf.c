/* SPDX-License-Identifier: MIT */
/*
 * fuzz_conf: the configuration parser (conf_load_file: comment blanking,
 * libconfuse, every directive's check, the rules tying them). The input
 * is written to a file in $TMPDIR (libconfuse reads files) and loaded.
 * Checked: a failure leaves *out untouched and an error line that starts
 * with the file name; a success dumps (conf_dump) to text that loads
 * again to an equal configuration (conf_equal).
 */
#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "conf.h"
#include "fuzz.h"

static char path[4096], path2[4096];

/* Write data[0..size) to file p. */
static void put_file(const char *p, const void *data, size_t size)
{
	FILE *f = fopen(p, "w");

	assert(f);
	assert(fwrite(data, 1, size, f) == size);
	fclose(f);
}

/* Pick the two scratch file names, once. */
static void init_paths(void)
{
	const char *tmp = getenv("TMPDIR");

	if (path[0])
		return;
	snprintf(path, sizeof(path), "%s/fuzz_conf.%d.conf",
		 tmp && *tmp ? tmp : "/tmp", (int)getpid());
	snprintf(path2, sizeof(path2), "%s.dump", path);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct conf *c = (struct conf *)(uintptr_t)1, *c2 = NULL;
	char err[CONF_ERR_MAX];
	char *dump = NULL;
	size_t dlen = 0;
	FILE *f;

	init_paths();
	put_file(path, data, size);
	if (conf_load_file(path, &c, err, sizeof(err)) != 0) {
		assert(c == (struct conf *)(uintptr_t)1);
		assert(strncmp(err, path, strlen(path)) == 0);
		return 0;
	}
	f = open_memstream(&dump, &dlen);
	assert(f);
	conf_dump(c, f);
	fclose(f);
	put_file(path2, dump, dlen);
	if (conf_load_file(path2, &c2, err, sizeof(err)) != 0) {
		fprintf(stderr, "dump does not load: %s\n%s\n", err, dump);
		abort();
	}
	assert(conf_equal(c, c2));
	conf_free(&c);
	conf_free(&c2);
	free(dump);
	return 0;
}
