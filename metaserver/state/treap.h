/*
 * An intrusive treap (randomised balanced search tree): O(log n) expected insert, remove and ordered search.
 * Keys must be unique under the comparator. Nodes are embedded in the caller's structs.
 */
#ifndef MMC_TREAP_H
#define MMC_TREAP_H

#include <stdint.h>

struct treap_node {
	struct treap_node *left, *right;
	uint32_t prio;
};

/* <0, 0, >0 as a is before, equal to, after b. */
typedef int (*treap_cmp_fn)(const struct treap_node *a, const struct treap_node *b);

struct treap {
	struct treap_node *root;
	treap_cmp_fn cmp;
	uint32_t rng;
};

void treap_init(struct treap *t, treap_cmp_fn cmp);
void treap_insert(struct treap *t, struct treap_node *n);
/* Removes the node equal to n (n itself, since keys are unique). */
void treap_remove(struct treap *t, struct treap_node *n);
/* First node >= key, or NULL. */
struct treap_node *treap_lower_bound(const struct treap *t, const struct treap_node *key);
/* Last node <= key, or NULL. */
struct treap_node *treap_floor(const struct treap *t, const struct treap_node *key);

#endif
