/* SPDX-License-Identifier: MIT */
/*
 * conf_reader: see conf_reader.h. The worker is a detached thread per
 * read: reloads are rare, and a thread blocked in getaddrinfo cannot be
 * cancelled cleanly, so the loop never joins it; the job's `finished`
 * and `abandoned`, under its mutex, say which side frees the job.
 */
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>
#include <event2/event.h>

#include "conf.h"
#include "conf_reader.h"
#include "daemon.h"
#include "log.h"

/* One read, shared by the worker and the loop. */
struct conf_job {
	pthread_mutex_t mu;
	bool finished;			/* the worker is done with it */
	bool abandoned;			/* the loop let it go (stop) */
	int efd;			/* the worker's wake-up of the loop */
	char *path;			/* owned */
	struct conf *next;		/* the result, owned; NULL: refused */
	char err[CONF_ERR_MAX];		/* why refused */
	char **warns;			/* names that did not resolve, owned */
	size_t nwarn;
};

/* The daemon's reader (d->conf_reader). */
struct conf_reader {
	struct conf_job *job;		/* in flight, or NULL */
	struct event *ev;		/* on job->efd while in flight */
	conf_reader_fn done;
	bool again;			/* a start came while job was out */
};

/* Free a job and what it holds (by the side that owns it). */
static void job_free(struct conf_job *j)
{
	conf_free(&j->next);
	for (size_t i = 0; i < j->nwarn; i++)
		free(j->warns[i]);
	free(j->warns);
	free(j->path);
	if (j->efd >= 0)
		close(j->efd);
	pthread_mutex_destroy(&j->mu);
	free(j);
}

/* conf_clients_resolve's warning: kept for the loop to log. Worker. */
static void keep_warn(void *arg, const char *msg)
{
	struct conf_job *j = arg;
	char **w = realloc(j->warns, (j->nwarn + 1) * sizeof(*w));
	char *m = strdup(msg);

	if (!w || !m) {
		free(m);
		if (w)
			j->warns = w;
		return;
	}
	j->warns = w;
	j->warns[j->nwarn++] = m;
}

/* The worker: read, resolve, then hand over or free. */
static void *worker(void *arg)
{
	struct conf_job *j = arg;
	struct conf *next = NULL;
	uint64_t one = 1;
	bool gone;

	if (conf_load_file(j->path, &next, j->err, sizeof(j->err)) == 0)
		conf_clients_resolve(next, keep_warn, j);
	pthread_mutex_lock(&j->mu);
	j->next = next;
	j->finished = true;
	gone = j->abandoned;
	if (!gone && write(j->efd, &one, sizeof(one)) < 0) {
		/* An eventfd's counter cannot overflow here. */
	}
	pthread_mutex_unlock(&j->mu);
	if (gone)
		job_free(j);
	return NULL;
}

/* The worker finished: take its result and call back. Loop thread. */
static void ready_cb(evutil_socket_t fd, short what, void *arg)
{
	struct daemon *d = arg;
	struct conf_reader *r = d->conf_reader;
	struct conf_job *j = r->job;
	struct conf *next;
	uint64_t n;
	bool finished, again;

	(void)fd;
	(void)what;
	if (read(j->efd, &n, sizeof(n)) < 0) {
		/* EAGAIN: woken before the count; `finished` decides. */
	}
	pthread_mutex_lock(&j->mu);
	finished = j->finished;
	pthread_mutex_unlock(&j->mu);
	if (!finished)
		return;
	event_free(r->ev);
	r->ev = NULL;
	r->job = NULL;
	next = j->next;
	j->next = NULL;
	again = r->again;
	r->again = false;
	r->done(d, next, j->err, j->warns, j->nwarn, again);
	job_free(j);
}

int conf_reader_start(struct daemon *d, const char *path,
		      conf_reader_fn done)
{
	struct conf_reader *r = d->conf_reader;
	struct conf_job *j;
	pthread_attr_t at;
	pthread_t t;
	int rc;

	if (!r && !(r = d->conf_reader = calloc(1, sizeof(*r))))
		return -1;
	if (r->job) {
		r->again = true;
		return 1;
	}
	j = calloc(1, sizeof(*j));
	if (!j)
		return -1;
	j->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	pthread_mutex_init(&j->mu, NULL);
	if (j->efd < 0 || !(j->path = strdup(path)) ||
	    !(r->ev = event_new(d->base, j->efd, EV_READ | EV_PERSIST,
				ready_cb, d)) ||
	    event_add(r->ev, NULL) != 0) {
		if (r->ev)
			event_free(r->ev);
		r->ev = NULL;
		job_free(j);
		return -1;
	}
	r->job = j;
	r->done = done;
	pthread_attr_init(&at);
	pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
	rc = pthread_create(&t, &at, worker, j);
	pthread_attr_destroy(&at);
	if (rc != 0) {
		event_free(r->ev);
		r->ev = NULL;
		r->job = NULL;
		job_free(j);
		return -1;
	}
	return 0;
}

bool conf_reader_busy(const struct daemon *d)
{
	return d->conf_reader && d->conf_reader->job;
}

void conf_reader_stop(struct daemon *d)
{
	struct conf_reader *r = d->conf_reader;
	struct conf_job *j;
	bool finished;

	if (!r)
		return;
	if (r->ev)
		event_free(r->ev);
	if ((j = r->job)) {
		pthread_mutex_lock(&j->mu);
		finished = j->finished;
		j->abandoned = true;
		pthread_mutex_unlock(&j->mu);
		if (finished)
			job_free(j);	/* the worker no longer touches it */
		else
			log_info("reload: a configuration read still out "
				 "(reading the file, or a client's host name); "
				 "left behind");
	}
	free(r);
	d->conf_reader = NULL;
}
