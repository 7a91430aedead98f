/*
 * list: an intrusive circular doubly linked list (the kernel's list_head idea), for LRUs and per-owner lists.
 *
 * A list is a struct list head; an element embeds a struct list node and is found back with list_entry(). Every
 * operation is O(1) and none allocates, so none fails. The head and the elements belong to the caller; the list only
 * links them. A node must not be on two lists at once through the same member.
 *
 * Thread-safety: none; the list's owner serialises.
 *
 *   LIST_INIT(name), list_init(l)  an empty list (head and node alike point at themselves)
 *   list_empty(head)               no element
 *   list_linked(n)                 n is on some list (a node after list_init() or list_del() is not)
 *   list_add_head(head, n)         n first; list_add_tail(head, n): n last
 *   list_del(n)                    unlinks n and makes it point at itself, so a second list_del() is harmless
 *   list_entry(n, type, member)    the element holding node n
 */
#ifndef MMC_LIST_H
#define MMC_LIST_H

#include <stdbool.h>
#include <stddef.h>

struct list {
	struct list *prev, *next;
};

#define LIST_INIT(name)                                                                                                \
	{                                                                                                              \
		&(name), &(name)                                                                                       \
	}
#define list_entry(ptr, type, member) ((type *)((char *)(ptr)-offsetof(type, member)))

static inline void list_init(struct list *l)
{
	l->prev = l->next = l;
}

static inline bool list_empty(const struct list *l)
{
	return l->next == l;
}

/* A node that is not on any list points at itself (after list_init or list_del). */
static inline bool list_linked(const struct list *n)
{
	return n->next != n;
}

static inline void list_add_head(struct list *head, struct list *n)
{
	n->next = head->next;
	n->prev = head;
	head->next->prev = n;
	head->next = n;
}

static inline void list_add_tail(struct list *head, struct list *n)
{
	list_add_head(head->prev, n);
}

static inline void list_del(struct list *n)
{
	n->prev->next = n->next;
	n->next->prev = n->prev;
	n->prev = n->next = n;
}

#endif
