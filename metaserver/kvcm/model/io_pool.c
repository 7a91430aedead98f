#include "io_pool.h"

#include <event2/event.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <unistd.h>

#include "mmc/mmc.h"

struct io_pool {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct io_job *todo, **todo_tail, *finished;
	bool stopping;
	uint64_t busy;
	uint32_t nthreads;
	pthread_t *threads;
	int pipe[2]; /* workers write a byte when they finish something; the loop drains */
	struct event *ev;
};

static void *worker(void *arg)
{
	struct io_pool *p = arg;
	struct io_job *j;

	pthread_mutex_lock(&p->lock);
	for (;;) {
		while (!p->todo && !p->stopping)
			pthread_cond_wait(&p->cond, &p->lock);
		if (!p->todo)
			break;
		j = p->todo;
		p->todo = j->next;
		if (!p->todo)
			p->todo_tail = &p->todo;
		pthread_mutex_unlock(&p->lock);
		j->work(j);
		pthread_mutex_lock(&p->lock);
		j->next = p->finished;
		p->finished = j;
		if (write(p->pipe[1], "x", 1) < 0) {
			/* the pipe is full: the loop has wake-ups pending anyway */
		}
	}
	pthread_mutex_unlock(&p->lock);
	return NULL;
}

static void run_finished(struct io_pool *p)
{
	struct io_job *list, *next, *rev = NULL;

	pthread_mutex_lock(&p->lock);
	list = p->finished;
	p->finished = NULL;
	pthread_mutex_unlock(&p->lock);
	for (; list; list = next) { /* oldest first */
		next = list->next;
		list->next = rev;
		rev = list;
	}
	for (; rev; rev = next) {
		next = rev->next;
		pthread_mutex_lock(&p->lock);
		p->busy--;
		pthread_mutex_unlock(&p->lock);
		rev->done(rev);
	}
}

static void wake_cb(evutil_socket_t fd, short what, void *arg)
{
	char buf[256];

	while (read(fd, buf, sizeof(buf)) > 0)
		;
	run_finished(arg);
}

int io_pool_start(struct io_pool **out, struct event_base *base, uint32_t threads)
{
	struct io_pool *p = calloc(1, sizeof(*p));

	if (!p)
		return MMC_MALLOC_FAILED;
	p->todo_tail = &p->todo;
	pthread_mutex_init(&p->lock, NULL);
	pthread_cond_init(&p->cond, NULL);
	p->pipe[0] = p->pipe[1] = -1;
	if (pipe2(p->pipe, O_NONBLOCK | O_CLOEXEC))
		goto fail;
	p->ev = event_new(base, p->pipe[0], EV_READ | EV_PERSIST, wake_cb, p);
	p->threads = calloc(threads, sizeof(*p->threads));
	if (!p->ev || !p->threads || event_add(p->ev, NULL))
		goto fail;
	for (; p->nthreads < threads; p->nthreads++)
		if (pthread_create(&p->threads[p->nthreads], NULL, worker, p))
			goto fail;
	*out = p;
	return 0;
fail:
	io_pool_stop(p);
	return MMC_ERROR;
}

int io_pool_submit(struct io_pool *p, struct io_job *j)
{
	pthread_mutex_lock(&p->lock);
	j->next = NULL;
	*p->todo_tail = j;
	p->todo_tail = &j->next;
	p->busy++;
	pthread_cond_signal(&p->cond);
	pthread_mutex_unlock(&p->lock);
	return 0;
}

void io_pool_stop(struct io_pool *p)
{
	if (!p)
		return;
	pthread_mutex_lock(&p->lock);
	p->stopping = true;
	pthread_cond_broadcast(&p->cond);
	pthread_mutex_unlock(&p->lock);
	for (uint32_t i = 0; i < p->nthreads; i++)
		pthread_join(p->threads[i], NULL);
	run_finished(p);
	if (p->ev)
		event_free(p->ev);
	if (p->pipe[0] >= 0)
		close(p->pipe[0]);
	if (p->pipe[1] >= 0)
		close(p->pipe[1]);
	pthread_mutex_destroy(&p->lock);
	pthread_cond_destroy(&p->cond);
	free(p->threads);
	free(p);
}
