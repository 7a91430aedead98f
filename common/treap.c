#include "treap.h"

#include <stddef.h>

void treap_init(struct treap *t, treap_cmp_fn cmp)
{
	t->root = NULL;
	t->cmp = cmp;
	t->rng = 0x9e3779b9u;
}

static uint32_t next_prio(struct treap *t)
{
	/* xorshift32: priorities only need to look random, not be unpredictable */
	uint32_t x = t->rng;

	x ^= x << 13;
	x ^= x >> 17;
	x ^= x << 5;
	t->rng = x;
	return x;
}

static struct treap_node *rotate_right(struct treap_node *n)
{
	struct treap_node *l = n->left;

	n->left = l->right;
	l->right = n;
	return l;
}

static struct treap_node *rotate_left(struct treap_node *n)
{
	struct treap_node *r = n->right;

	n->right = r->left;
	r->left = n;
	return r;
}

static struct treap_node *insert_at(struct treap *t, struct treap_node *root, struct treap_node *n)
{
	if (!root)
		return n;
	if (t->cmp(n, root) < 0) {
		root->left = insert_at(t, root->left, n);
		if (root->left->prio > root->prio)
			root = rotate_right(root);
	} else {
		root->right = insert_at(t, root->right, n);
		if (root->right->prio > root->prio)
			root = rotate_left(root);
	}
	return root;
}

void treap_insert(struct treap *t, struct treap_node *n)
{
	n->left = n->right = NULL;
	n->prio = next_prio(t);
	t->root = insert_at(t, t->root, n);
}

/* Joins two treaps where every key of a is before every key of b. */
static struct treap_node *join(struct treap_node *a, struct treap_node *b)
{
	if (!a)
		return b;
	if (!b)
		return a;
	if (a->prio > b->prio) {
		a->right = join(a->right, b);
		return a;
	}
	b->left = join(a, b->left);
	return b;
}

static struct treap_node *remove_at(struct treap *t, struct treap_node *root, struct treap_node *n)
{
	int c;

	if (!root)
		return NULL;
	c = t->cmp(n, root);
	if (c < 0)
		root->left = remove_at(t, root->left, n);
	else if (c > 0)
		root->right = remove_at(t, root->right, n);
	else
		return join(root->left, root->right);
	return root;
}

void treap_remove(struct treap *t, struct treap_node *n)
{
	t->root = remove_at(t, t->root, n);
	n->left = n->right = NULL;
}

struct treap_node *treap_lower_bound(const struct treap *t, const struct treap_node *key)
{
	struct treap_node *n = t->root, *best = NULL;

	while (n) {
		if (t->cmp(n, key) >= 0) {
			best = n;
			n = n->left;
		} else {
			n = n->right;
		}
	}
	return best;
}

struct treap_node *treap_floor(const struct treap *t, const struct treap_node *key)
{
	struct treap_node *n = t->root, *best = NULL;

	while (n) {
		if (t->cmp(n, key) <= 0) {
			best = n;
			n = n->right;
		} else {
			n = n->left;
		}
	}
	return best;
}
