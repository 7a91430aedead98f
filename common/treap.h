/*
 * treap: an intrusive randomised balanced search tree: O(log n) expected insert, remove, lower bound and floor.
 *
 * An element embeds a struct treap_node; the caller's comparator orders two nodes, and keys must be unique under it
 * (a search key is a node too: a stack element with only its key set). Nothing allocates, so nothing fails. The
 * caller owns the elements; the tree links them until they are removed.
 *
 * The priorities come from a fixed xorshift sequence: they only need to look random. Someone who controls the order
 * of insertions could therefore unbalance the tree, so it must not order keys a client chooses (the allocator's free
 * extents are the server's own).
 *
 * Thread-safety: none; the tree's owner serialises. Recursion depth is the tree's height (O(log n) expected).
 *
 *   treap_init(t, cmp)          an empty tree ordered by cmp
 *   treap_insert(t, n)          links n (no node equal to it may be in the tree)
 *   treap_remove(t, n)          unlinks the node equal to n (n itself); nothing when there is none
 *   treap_lower_bound(t, key)   the first node >= key, or NULL
 *   treap_floor(t, key)         the last node <= key, or NULL
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
