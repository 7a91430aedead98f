#include "kvcm_test.h"

struct kvcm_srv srv;

void srv_up(const char *const *extra)
{
	cr_assert_eq(kvcm_srv_start(&srv, extra), 0, "mmc-metaserver with KVCM did not start");
}

void srv_down(void)
{
	kvcm_srv_stop(&srv);
}
