/* The policy layer's way out (policy_ops.h): BlobTasks and deferred replies become frames on a connection. */
#include "conn.h"
#include "key_reply.h"
#include "mmc/mmc.h"
#include "policy_ops.h"
#include "rpc.h"

static void send_task(struct meta *m, struct service *svc, const struct blob_task *t)
{
	Mmc__Frame f = MMC__FRAME__INIT;
	Mmc__BlobTask bt = MMC__BLOB_TASK__INIT;

	bt.op = t->op;
	bt.src_media = t->src_media;
	bt.dst_media = t->dst_media;
	bt.src_offset = t->src_offset;
	bt.dst_offset = t->dst_offset;
	bt.size = t->size;
	f.id = t->id;
	f.body_case = MMC__FRAME__BODY_TASK;
	f.task = &bt;
	conn_send(svc->session->conn, &f, false);
}

static void reply_keys(struct meta *m, struct session *s, uint64_t id, const struct key_result *r, size_t n,
                       bool durable)
{
	key_results_send(s->conn, id, r, n, durable);
}

static void reply_code(struct meta *m, struct session *s, uint64_t id, int result)
{
	rpc_reply_code(s->conn, id, result);
}

const struct policy_ops rpc_ops = {send_task, reply_keys, reply_code};
