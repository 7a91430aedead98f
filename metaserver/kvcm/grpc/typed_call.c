#include "typed_call.h"

#include "typed_reply.h"
#include "typed_request.h"

static void get_cache_location(struct call *c)
{
	struct typed_call *t = c->typed.arg;
	struct location_query q = {0};

	location_query_pb(c, (const pb_location_request *)t->req, &q);
	if (cache_location_answer(c, &q))
		pb_cache_locations(&t->out, c, &q);
	location_query_free(c, &q);
}

static void start_write_cache(struct call *c)
{
	struct typed_call *t = c->typed.arg;
	struct write_request in;

	write_request_pb(c, (const pb_write_request *)t->req, &in);
	write_cache_start(c, &in, pb_write_reply, &t->out);
	write_request_free(&in);
}

static void finish_write_cache(struct call *c)
{
	struct typed_call *t = c->typed.arg;
	struct finish_request in;

	finish_request_pb(c, (const pb_finish_request *)t->req, &in);
	write_cache_finish(c, &in);
}

static void report_event(struct call *c)
{
	struct typed_call *t = c->typed.arg;
	struct report_request in;

	report_request_pb(c, (const pb_report_request *)t->req, &in);
	report_event_answer(c, &in, pb_report_reply, &t->out);
	report_request_free(&in);
}

static const struct {
	const ProtobufCMessageDescriptor *input;
	typed_run_fn *run;
} methods[] = {
    {&kv_cache_manager__proto__meta__get_cache_location_request__descriptor, get_cache_location},
    {&kv_cache_manager__proto__meta__start_write_cache_request__descriptor, start_write_cache},
    {&kv_cache_manager__proto__meta__finish_write_cache_request__descriptor, finish_write_cache},
    {&kv_cache_manager__proto__meta__report_event_request__descriptor, report_event},
};

typed_run_fn *typed_run(const ProtobufCMethodDescriptor *method)
{
	for (size_t i = 0; i < sizeof(methods) / sizeof(methods[0]); i++)
		if (methods[i].input == method->input)
			return methods[i].run;
	return NULL;
}
