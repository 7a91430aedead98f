/* Intrusive circular doubly linked list (the kernel's list_head idea), for LRUs and per-service blob lists. */
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
